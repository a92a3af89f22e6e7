package simdevice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"strconv"
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
// phone's loopback (127.0.0.1, localhost, ::1) has only the ports the host
// reversed with `adb reverse` listening; each connection is a
// device-initiated adb stream to the host. Other addresses are reached
// directly, as the phone's own network would.
func (a *adapter) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host != "localhost" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil {
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
