package local

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/proxy"
)

// proxyState is the record/replay proxy of a local run: commands reach it
// through HTTP_PROXY/HTTPS_PROXY in their environment.
type proxyState struct {
	px       *proxy.Proxy
	recorded map[string]bool // builds that had their recording pass
}

// proxyMode is the proxy mode the controls ask for.
func proxyMode(c lab.Controls) string {
	if c.Proxy == "" {
		return proxy.ModeOff
	}
	return c.Proxy
}

// startProxy starts the proxy for exp and points every build's environment
// at it. Callers hold d.mu. Without proxy.file the recording lives in the
// run's temporary directory and is lost at Close (perflab run puts it next
// to the session).
func (d *Device) startProxyLocked(exp *lab.Experiment, mode string) (*proxyState, error) {
	if d.proxy != nil {
		return d.proxy, nil
	}
	cfg := proxy.Config{Mode: mode}
	if o := exp.Proxy; o != nil {
		cfg.File, cfg.IgnoreHeaders, cfg.IgnoreQuery, cfg.Timing, cfg.Target = o.File, o.IgnoreHeaders, o.IgnoreQuery, o.Timing, o.Target
		switch o.HTTPS {
		case "", "intercept":
		case "tunnel":
			cfg.TunnelHTTPS = true
		default:
			return nil, fmt.Errorf("proxy.https: %q, want intercept or tunnel", o.HTTPS)
		}
	}
	if cfg.File == "" {
		cfg.File = filepath.Join(d.tmp, "run.proxy.jsonl")
	}
	if mode == proxy.ModeReplay {
		// Replay starts by recording the builds the file lacks.
		cfg.Mode = proxy.ModeRecord
	}
	px, err := proxy.Start(cfg)
	if err != nil {
		return nil, err
	}
	d.proxy = &proxyState{px: px, recorded: map[string]bool{}}
	for k := range d.env {
		d.env[k] = append(d.env[k], px.Env()...)
	}
	return d.proxy, nil
}

// setupProxy starts the proxy when the experiment's controls turn it on and
// describes it for the settings event.
func (d *Device) setupProxy(exp *lab.Experiment, detail map[string]string) error {
	mode := proxyMode(exp.Controls)
	if mode == proxy.ModeOff {
		return nil
	}
	d.mu.Lock()
	err := d.closeProxyLocked() // a previous run's proxy
	var ps *proxyState
	if err == nil {
		ps, err = d.startProxyLocked(exp, mode)
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("controls.proxy: %w", err)
	}
	detail["proxy"] = ps.px.URL()
	detail["proxy_file"] = ps.px.File()
	detail["proxy_exchanges"] = strconv.Itoa(ps.px.Exchanges())
	detail["proxy_https"] = ps.px.HTTPSMode()
	if n := len(ps.px.Problems()); n > 0 {
		detail["proxy_problems"] = fmt.Sprintf("%d unreadable lines skipped, first: %v", n, ps.px.Problems()[0])
	}
	return nil
}

// RunTrial runs the reset procedure and one measured execution of the
// build. With the proxy on, the trial's HTTP traffic is recorded or
// replayed, and a request the recording cannot answer fails the trial. In
// replay mode a build without recordings first gets one unmeasured
// recording pass (MobileLab: record one trial per build, then replay N).
func (d *Device) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	mode := proxyMode(req.Controls)
	d.mu.Lock()
	ps := d.proxy
	exp := d.exp
	var err error
	if ps == nil && mode != proxy.ModeOff && exp != nil {
		// Turned on mid-run.
		ps, err = d.startProxyLocked(exp, mode)
	}
	d.mu.Unlock()
	if err != nil {
		return fail(fmt.Sprintf("controls.proxy: %v", err))
	}
	if ps == nil {
		return d.runTrial(ctx, req)
	}
	px := ps.px
	if mode == proxy.ModeReplay && !ps.recorded[req.BuildKey] && !px.Has(req.BuildKey) {
		px.SetMode(proxy.ModeRecord)
		px.BeginTrial(req.Index, req.BuildKey)
		res := d.runTrial(ctx, req)
		st, err := px.EndTrial()
		if res.Status != lab.StatusOK {
			return fail("proxy recording pass: " + res.Reason)
		}
		if err != nil {
			return fail("proxy recording pass: writing the recording: " + err.Error())
		}
		if e := st.Err(); e != nil {
			return fail("proxy recording pass: " + e.Error())
		}
	}
	ps.recorded[req.BuildKey] = true
	if err := px.SetMode(mode); err != nil {
		return fail(err.Error())
	}
	px.BeginTrial(req.Index, req.BuildKey)
	res := d.runTrial(ctx, req)
	st, err := px.EndTrial()
	if res.Status == lab.StatusOK {
		if e := st.Err(); e != nil {
			res.Status, res.Reason = lab.StatusFailed, e.Error()
		} else if err != nil {
			res.Status, res.Reason = lab.StatusFailed, "proxy: writing the recording: "+err.Error()
		}
	}
	return res
}

// closeProxyLocked stops the proxy; callers hold d.mu.
func (d *Device) closeProxyLocked() error {
	if d.proxy == nil {
		return nil
	}
	err := d.proxy.px.Close()
	d.proxy = nil
	return err
}
