package adb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/proxy"
	"github.com/perflab/perflab/lab/shquote"
)

// HTTPProxySetting is the global setting Android's ProxyTracker reads for
// the device-wide HTTP proxy ("HOST:PORT").
const HTTPProxySetting = "http_proxy"

// ProxyBeforeSetting is where perflab keeps, on the phone, the
// http_proxy value it is to restore ("unset": none) while the phone points at
// perflab's proxy, so a run that dies without restoring it is repaired by
// the next one instead of taking a dead proxy for the phone's own.
const ProxyBeforeSetting = "perflab_http_proxy_before"

// phoneProxy is perflab's record/replay proxy wired to the phone: the
// proxy listens on this host's loopback port P, `adb reverse tcp:P tcp:P`
// makes the phone's 127.0.0.1:P reach it, and the global http_proxy
// setting points the phone's apps at 127.0.0.1:P.
type phoneProxy struct {
	c    *proxy.Controller
	tmp  string // holds the recording when the experiment names no file; removed at Close
	port int    // where the phone connects, on the adb server's host (this one, or through the tunnel)
	// unexpose ends the relay from a remote adb server's host.
	unexpose func() error

	wired    bool   // reverse and http_proxy are set on the phone
	prev     string // http_proxy before perflab set it ("null": unset)
	havePrev bool
	leftover bool   // an earlier run had left the phone pointing at its proxy
	open     string // why any local client can use the proxy ("": only adb reverse)
}

// proxyLocked starts the proxy for exp once; callers hold d.mu.
func (d *Device) proxyLocked(exp *lab.Experiment) (*phoneProxy, error) {
	if d.hp != nil {
		return d.hp, nil
	}
	if d.c.Remote() && d.c.Tunnel == nil {
		return nil, d.c.remoteErr("the record/replay proxy")
	}
	hp := &phoneProxy{}
	dir := ""
	if exp.Proxy == nil || exp.Proxy.File == "" {
		// perflab run names a file next to the session; without one the
		// recording lives as long as the device.
		tmp, err := os.MkdirTemp("", "perflab-adb-proxy-")
		if err != nil {
			return nil, err
		}
		hp.tmp, dir = tmp, tmp
	}
	// The phone cannot send proxy credentials (the global http_proxy
	// setting has none): the proxy accepts only what the adb server relays
	// from the reversed port, where this host can tell.
	var access proxy.Access
	if d.c.Tunnel != nil {
		hp.open = "the phone reaches it through " + d.c.Tunnel.String() + ", where any process can connect to the forwarded port, and this host cannot tell who"
	} else if allow, err := adbPeerCheck(d.c.Addr); err == nil {
		access.AllowConn = allow
	} else {
		hp.open = err.Error()
	}
	c, err := proxy.NewController(exp, dir, access)
	if err != nil {
		if hp.tmp != "" {
			os.RemoveAll(hp.tmp)
		}
		return nil, err
	}
	port, unexpose, err := d.c.exposeLocal("the record/replay proxy", c.Proxy().Port())
	if err != nil {
		c.Close()
		if hp.tmp != "" {
			os.RemoveAll(hp.tmp)
		}
		return nil, err
	}
	hp.c, hp.port, hp.unexpose = c, port, unexpose
	d.hp = hp
	return hp, nil
}

// syncProxy wires the phone to the proxy when mode is record or replay
// (starting the proxy the first time) and unwires it when mode is off,
// restoring the phone's own http_proxy. It returns the controller to run
// the trial through, nil when the proxy is off.
func (d *Device) syncProxy(ctx context.Context, mode string) (*proxy.Controller, error) {
	d.pxMu.Lock()
	defer d.pxMu.Unlock()
	if mode == proxy.ModeOff {
		d.mu.Lock()
		hp := d.hp
		d.mu.Unlock()
		if hp != nil {
			return nil, d.unwireProxy(ctx, hp)
		}
		return nil, nil
	}
	d.mu.Lock()
	exp := d.exp
	var hp *phoneProxy
	var err error
	if exp == nil {
		err = errors.New("the device was not set up")
	} else {
		hp, err = d.proxyLocked(exp)
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := d.wireProxy(ctx, hp); err != nil {
		return nil, err
	}
	return hp.c, nil
}

// wireProxy sets the reverse and the phone's http_proxy, noting the
// phone's own value the first time. Callers hold d.pxMu.
func (d *Device) wireProxy(ctx context.Context, hp *phoneProxy) error {
	if hp.wired {
		return nil
	}
	if err := d.c.Reverse(ctx, d.serial, hp.port, hp.port); err != nil {
		return fmt.Errorf("adb reverse for the proxy: %w", err)
	}
	if !hp.havePrev {
		out, err := d.c.Run(ctx, d.serial, "settings get global "+ProxyBeforeSetting+"; settings get global "+HTTPProxySetting)
		if err != nil {
			return fmt.Errorf("reading the phone's proxy (settings get global %s): %w", HTTPProxySetting, err)
		}
		f := strings.Fields(out)
		if len(f) != 2 {
			return fmt.Errorf("reading the phone's proxy: settings printed %q, want two values", out)
		}
		switch f[0] {
		case "null": // no run left the phone pointing at perflab
			hp.prev = f[1]
		case "unset":
			hp.prev, hp.leftover = "null", true
		default:
			hp.prev, hp.leftover = f[0], true
		}
		hp.havePrev = true
	}
	addr := "127.0.0.1:" + strconv.Itoa(hp.port)
	before := hp.prev
	if before == "" || before == "null" {
		before = "unset"
	}
	if _, err := d.c.Run(ctx, d.serial, "settings put global "+ProxyBeforeSetting+" "+shquote.Quote(before)+
		" && settings put global "+HTTPProxySetting+" "+addr); err != nil {
		return fmt.Errorf("pointing the phone at the proxy (settings put global %s %s): %w", HTTPProxySetting, addr, err)
	}
	hp.wired = true
	return nil
}

// unwireProxy restores the phone's http_proxy and removes the reverse.
// Callers hold d.pxMu.
func (d *Device) unwireProxy(ctx context.Context, hp *phoneProxy) error {
	if !hp.wired {
		return nil
	}
	var cmd string
	if hp.prev == "" || hp.prev == "null" {
		// Deleting alone leaves the proxy in force on some Android
		// versions until a reboot; ":0" turns it off at once.
		cmd = "settings put global " + HTTPProxySetting + " :0 && settings delete global " + HTTPProxySetting + " >/dev/null"
	} else {
		cmd = "settings put global " + HTTPProxySetting + " " + shquote.Quote(hp.prev)
	}
	cmd += " && settings delete global " + ProxyBeforeSetting + " >/dev/null"
	var errs []error
	if _, err := d.c.Run(ctx, d.serial, cmd); err != nil {
		errs = append(errs, fmt.Errorf("restoring the phone's %s (%s): %w", HTTPProxySetting, orNull(hp.prev), err))
	}
	if err := d.c.ReverseRemove(ctx, d.serial, hp.port); err != nil {
		errs = append(errs, fmt.Errorf("removing the proxy's adb reverse: %w", err))
	}
	if len(errs) == 0 {
		hp.wired = false
	}
	return errors.Join(errs...)
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// proxyDetail describes the proxy for a settings event.
func (d *Device) proxyDetail(c *proxy.Controller) map[string]string {
	detail := map[string]string{}
	c.Detail(detail)
	d.mu.Lock()
	hp := d.hp
	d.mu.Unlock()
	if hp != nil {
		d.pxMu.Lock()
		detail["proxy_phone"] = fmt.Sprintf("settings put global %s 127.0.0.1:%d; adb reverse tcp:%d tcp:%d", HTTPProxySetting, hp.port, hp.port, hp.port)
		if d.c.Tunnel != nil {
			detail["proxy_phone"] += fmt.Sprintf("; port %d on the adb server's host forwarded back over %s", hp.port, d.c.Tunnel)
		}
		detail["proxy_phone_before"] = orNull(hp.prev)
		if strings.HasPrefix(detail["proxy_https"], "intercept") {
			detail["proxy_phone_https"] = "apps see HTTPS signed by perflab's CA: they must trust it (debug network-security-config), or set proxy.https to tunnel"
		}
		if hp.open != "" {
			detail["proxy_access"] = "open to every local client: " + hp.open
		}
		if hp.leftover {
			detail["proxy_phone_repaired"] = "an earlier run left http_proxy pointing at its proxy; its saved value is the one restored"
		}
		d.pxMu.Unlock()
	}
	return detail
}

// closeProxy unwires the phone and stops the proxy.
func (d *Device) closeProxy(ctx context.Context) error {
	d.pxMu.Lock()
	defer d.pxMu.Unlock()
	d.mu.Lock()
	hp := d.hp
	d.hp = nil
	d.mu.Unlock()
	if hp == nil {
		return nil
	}
	err := d.unwireProxy(ctx, hp)
	hp.unexpose()
	if cerr := hp.c.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("closing the proxy: %w", cerr))
	}
	if hp.tmp != "" {
		os.RemoveAll(hp.tmp)
	}
	return err
}
