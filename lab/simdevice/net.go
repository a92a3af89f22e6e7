package simdevice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// settingsStore is the framework's settings provider of the simulated
// phone (settings get/put/delete/list), per namespace.
type settingsStore struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

// Setting implements shell.Settings.
func (a *adapter) Setting(ns, key string) (string, bool) {
	a.settings.mu.Lock()
	defer a.settings.mu.Unlock()
	v, ok := a.settings.m[ns][key]
	return v, ok
}

// PutSetting implements shell.Settings.
func (a *adapter) PutSetting(ns, key, value string) {
	a.settings.mu.Lock()
	defer a.settings.mu.Unlock()
	if a.settings.m == nil {
		a.settings.m = map[string]map[string]string{}
	}
	if a.settings.m[ns] == nil {
		a.settings.m[ns] = map[string]string{}
	}
	a.settings.m[ns][key] = value
}

// DeleteSetting implements shell.Settings.
func (a *adapter) DeleteSetting(ns, key string) bool {
	a.settings.mu.Lock()
	defer a.settings.mu.Unlock()
	_, ok := a.settings.m[ns][key]
	delete(a.settings.m[ns], key)
	return ok
}

// SettingsList implements shell.Settings.
func (a *adapter) SettingsList(ns string) map[string]string {
	a.settings.mu.Lock()
	defer a.settings.mu.Unlock()
	return maps.Clone(a.settings.m[ns])
}

// Setting returns a value of the phone's settings provider (namespace
// "global", "secure" or "system") and whether it is set.
func (s *Sim) Setting(ns, key string) (string, bool) { return s.adapter.Setting(ns, key) }

// DialContext implements shell.Network: the phone's connections. The
// simulated phone has no network of its own: it reaches only its loopback
// (127.0.0.1, ::1, localhost), where only the ports the host reversed with
// `adb reverse` listen, each connection a device-initiated adb stream to
// the host. Any other address is refused with ErrNoNetwork: the phone runs
// inside perflab on this host, and letting it dial out would let anyone who
// can reach its adb port (see --listen) use this host to reach others.
func (a *adapter) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !isLoopbackHost(host) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("connect to %s: %w", addr, ErrNoNetwork)}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return nil, fmt.Errorf("dial %s: bad port", addr)
	}
	st, err := a.s.Server.DialReverse(ctx, p)
	if errors.Is(err, ErrNoReverse) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("connect to %s: %w (nothing listens on the phone's port %d: no adb reverse)", addr, syscall.ECONNREFUSED, p)}
	}
	if err != nil {
		return nil, err
	}
	return bridge(st), nil
}

// ErrNoNetwork is the error of a connection the simulated phone refuses
// because it is not to its loopback.
var ErrNoNetwork = errors.New("the simulated phone reaches only its loopback (127.0.0.1, ::1, localhost) on ports reversed with adb reverse; other addresses are refused")

// isLoopbackHost reports whether host names the loopback: "localhost" or a
// loopback IP literal. Other names are not resolved.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bridge turns an adb stream into a net.Conn (with deadlines, which HTTP
// clients use) by copying between it and one end of a pipe.
func bridge(st io.ReadWriteCloser) net.Conn {
	mine, theirs := net.Pipe()
	go func() {
		io.Copy(st, theirs)
		st.Close()
	}()
	go func() {
		io.Copy(theirs, st)
		theirs.Close()
	}()
	return mine
}

// ErrExposed says a listen address is not the loopback: every host that can
// reach it can drive the simulated phone as an adb device, with no
// authentication (adb's own RSA check is for the phone's user to approve,
// and the simulated phone approves every key).
var ErrExposed = errors.New("is not a loopback address: any host that can reach it gets an unauthenticated adb device (shell, push, reverse)")

// CheckListen reports whether addr ("HOST:PORT", as for Server.Listen)
// binds only the loopback. An empty host, an unspecified address (0.0.0.0,
// ::) and any name but "localhost" are exposed: the error wraps ErrExposed.
func CheckListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !isLoopbackHost(host) {
		return fmt.Errorf("listen address %q %w", addr, ErrExposed)
	}
	return nil
}
