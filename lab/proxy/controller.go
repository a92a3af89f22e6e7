package proxy

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/perflab/perflab/lab"
)

// Controller drives a proxy through the trials of a run for a device
// backend: it starts the proxy the experiment's controls ask for, switches
// its mode per trial (live controls may change it), gives each build one
// unmeasured recording pass before replaying it (MobileLab: record one
// trial per build, then replay N), and turns the proxy's errors into the
// trial's failure. Backends point their builds at it: local commands
// through Env, phones through `adb reverse tcp:Port tcp:Port`.
type Controller struct {
	px *Proxy

	mu       sync.Mutex
	recorded map[string]bool // builds that had their recording pass
}

// Mode returns the proxy mode controls ask for ("off" when unset).
func Mode(c lab.Controls) string {
	if c.Proxy == "" {
		return ModeOff
	}
	return c.Proxy
}

// ConfigFor turns an experiment's proxy options into a Config. Without a
// file the recording goes to dir/run.proxy.jsonl (perflab run gives a file
// next to the session).
func ConfigFor(o *lab.ProxyOptions, dir string) (Config, error) {
	var cfg Config
	if o != nil {
		cfg.File, cfg.IgnoreHeaders, cfg.IgnoreQuery, cfg.Timing, cfg.Target = o.File, o.IgnoreHeaders, o.IgnoreQuery, o.Timing, o.Target
		cfg.RedactHeaders = o.RedactHeaders
		cfg.KeepSecrets = o.Redact != nil && !*o.Redact
		switch o.HTTPS {
		case "", "intercept":
		case "tunnel":
			cfg.TunnelHTTPS = true
		default:
			return cfg, fmt.Errorf("proxy.https: %q, want intercept or tunnel", o.HTTPS)
		}
	}
	if cfg.File == "" {
		cfg.File = filepath.Join(dir, "run.proxy.jsonl")
	}
	return cfg, nil
}

// Access says how a controller's proxy tells the device under test from
// other local clients.
type Access struct {
	// Secret requires per-run proxy credentials, which the build receives
	// in its environment (Env): local commands.
	Secret bool
	// AllowConn vets each connection (phones, which cannot send proxy
	// credentials through Android's global http_proxy setting).
	AllowConn func(c net.Conn) error
}

// NewController starts a proxy for exp (whatever its controls say: mode is
// set per trial). dir holds the recording when the experiment names none.
func NewController(exp *lab.Experiment, dir string, access Access) (*Controller, error) {
	cfg, err := ConfigFor(exp.Proxy, dir)
	if err != nil {
		return nil, err
	}
	if access.Secret {
		cfg.Secret = NewSecret()
	}
	cfg.AllowConn = access.AllowConn
	// Replay starts by recording what the file lacks; the mode is set per
	// trial anyway.
	cfg.Mode = ModeRecord
	px, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	return &Controller{px: px, recorded: map[string]bool{}}, nil
}

// Proxy is the running proxy.
func (c *Controller) Proxy() *Proxy { return c.px }

// Detail describes the proxy for a settings event.
func (c *Controller) Detail(into map[string]string) {
	into["proxy"] = c.px.URL()
	into["proxy_file"] = c.px.File()
	into["proxy_exchanges"] = strconv.Itoa(c.px.Exchanges())
	into["proxy_https"] = c.px.HTTPSMode()
	if r := c.px.Redacting(); len(r) > 0 {
		into["proxy_redact"] = strings.Join(r, ",") + ` (values recorded as "` + Redacted + `"; proxy.redact false keeps them)`
	} else {
		into["proxy_redact"] = "off: every header recorded as sent (proxy.redact false)"
	}
	switch {
	case c.px.cfg.Secret != "":
		into["proxy_access"] = "per-run credentials (Proxy-Authorization) in the build's HTTP_PROXY; other clients get 407"
	case c.px.cfg.AllowConn != nil:
		into["proxy_access"] = "connections through adb reverse only; others get 407"
	}
	if p := c.px.Problems(); len(p) > 0 {
		into["proxy_problems"] = fmt.Sprintf("%d unreadable lines skipped, first: %v", len(p), p[0])
	}
}

// Trial runs one trial through the proxy. run executes the trial (reset
// procedure and measurement) and may be called twice: first as the
// recording pass of a build that has no recording yet, then for real. A
// request the recording cannot answer, or an upstream failure, fails an
// otherwise good trial with the proxy's explanation.
func (c *Controller) Trial(req lab.TrialRequest, run func() lab.TrialResult) lab.TrialResult {
	mode := Mode(req.Controls)
	px := c.px
	c.mu.Lock()
	needPass := mode == ModeReplay && !c.recorded[req.BuildKey] && !px.Has(req.BuildKey)
	c.mu.Unlock()
	if needPass {
		px.SetMode(ModeRecord)
		px.BeginTrial(req.Index, req.BuildKey)
		res := run()
		st, err := px.EndTrial()
		switch {
		case res.Status != lab.StatusOK:
			return failed("proxy recording pass: " + res.Reason)
		case err != nil:
			return failed("proxy recording pass: writing the recording: " + err.Error())
		case st.Err() != nil:
			return failed("proxy recording pass: " + st.Err().Error())
		}
	}
	c.mu.Lock()
	c.recorded[req.BuildKey] = true
	c.mu.Unlock()
	if err := px.SetMode(mode); err != nil {
		return failed(err.Error())
	}
	px.BeginTrial(req.Index, req.BuildKey)
	res := run()
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

// Close stops the proxy.
func (c *Controller) Close() error { return c.px.Close() }

func failed(reason string) lab.TrialResult {
	return lab.TrialResult{Status: lab.StatusFailed, Reason: reason, Metrics: []lab.Metric{}}
}
