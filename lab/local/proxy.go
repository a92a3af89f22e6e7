package local

import (
	"context"
	"fmt"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/proxy"
)

// startProxyLocked starts the record/replay proxy for exp and points every
// build's environment at it (HTTP_PROXY, HTTPS_PROXY and the CA variables).
// Callers hold d.mu. Without proxy.file the recording lives in the run's
// temporary directory and is lost at Close (perflab run puts it next to the
// session).
func (d *Device) startProxyLocked(exp *lab.Experiment) (*proxy.Controller, error) {
	if d.proxy != nil {
		return d.proxy, nil
	}
	c, err := proxy.NewController(exp, d.tmp, proxy.Access{Secret: true})
	if err != nil {
		return nil, err
	}
	envs := make(map[string][]string, len(d.env))
	for k, env := range d.env {
		// The proxy's entries come last and win, as appended to the
		// environment of a command they would.
		env, err := spawnEnv(append(env[:len(env):len(env)], c.Proxy().Env()...))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("proxy environment: %w", err)
		}
		envs[k] = env
	}
	d.env, d.proxy = envs, c
	return c, nil
}

// setupProxy starts the proxy when the experiment's controls turn it on and
// describes it for the settings event.
func (d *Device) setupProxy(exp *lab.Experiment, detail map[string]string) error {
	if proxy.Mode(exp.Controls) == proxy.ModeOff {
		return nil
	}
	d.mu.Lock()
	err := d.closeProxyLocked() // a previous run's proxy
	var c *proxy.Controller
	if err == nil {
		c, err = d.startProxyLocked(exp)
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("controls.proxy: %w", err)
	}
	c.Detail(detail)
	return nil
}

// RunTrial runs the reset procedure and one measured execution of the
// build. With the proxy on, the trial's HTTP(S) traffic is recorded or
// replayed, and a request the recording cannot answer fails the trial (see
// proxy.Controller).
func (d *Device) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	c := d.proxy
	var err error
	if c == nil && proxy.Mode(req.Controls) != proxy.ModeOff && d.exp != nil {
		c, err = d.startProxyLocked(d.exp) // turned on mid-run
	}
	d.mu.Unlock()
	if err != nil {
		return fail(fmt.Sprintf("controls.proxy: %v", err))
	}
	if c == nil {
		return d.runTrial(ctx, req)
	}
	return c.Trial(req, func() lab.TrialResult { return d.runTrial(ctx, req) })
}

// closeProxyLocked stops the proxy; callers hold d.mu.
func (d *Device) closeProxyLocked() error {
	if d.proxy == nil {
		return nil
	}
	err := d.proxy.Close()
	d.proxy = nil
	return err
}
