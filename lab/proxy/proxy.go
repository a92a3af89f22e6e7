// Package proxy is perflab's HTTP record/replay proxy (MobileLab's network
// isolation). In record mode it forwards requests upstream and appends every
// request/response pair, with its timing, to a recording file next to the
// session. In replay mode it serves those responses again, matching on
// method, URL, the request headers that are not volatile, and the body hash,
// and it never touches the network; a request with no recording is an
// error counted on the trial in flight.
//
// The proxy binds to loopback only. Local commands reach it through
// HTTP_PROXY/HTTPS_PROXY (see Env); phones reach it through `adb reverse`.
// The MobileLab flow is: record one trial per build, then replay N.
package proxy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
)

// Proxy modes, the values of the experiment file's controls.proxy.
const (
	ModeOff    = "off"    // forward without recording
	ModeRecord = "record" // forward and record
	ModeReplay = "replay" // serve recordings only
)

// Replay timing choices.
const (
	TimingRecorded = "recorded" // wait the recorded time to headers and to the last byte
	TimingNone     = "none"     // serve at once
)

// MaxBody is the largest request or response body the proxy records.
const MaxBody = 64 << 20

// Config configures a proxy.
type Config struct {
	// File is the recording. Record mode appends to it (creating it);
	// replay mode reads it. Required unless Mode is off.
	File string
	// Mode is the initial mode: off, record or replay (default off).
	Mode string
	// IgnoreHeaders are request headers left out of matching, in addition
	// to DefaultIgnoreHeaders; "*" ignores every header.
	IgnoreHeaders []string
	// IgnoreQuery are query parameters left out of matching; a trailing
	// "*" ignores every parameter with that prefix.
	IgnoreQuery []string
	// Timing is TimingRecorded (default) or TimingNone.
	Timing string
	// Target, when set, is the origin (e.g. "http://api.example.com") for
	// requests that arrive with a relative URL, so an app whose server URL
	// points at the proxy (through adb reverse) works without proxy settings.
	Target string
	// Addr is the listen address, loopback only (default "127.0.0.1:0").
	Addr string
	// Transport reaches upstream servers in record and off modes. The
	// default dials directly and never goes through another proxy.
	Transport http.RoundTripper
	// TunnelHTTPS passes HTTPS (CONNECT) through undecrypted: nothing is
	// recorded and replay refuses it. By default the proxy decrypts HTTPS
	// with certificates from its own authority (see CAFile), so HTTPS is
	// recorded and replayed like HTTP.
	TunnelHTTPS bool
	// RedactHeaders are headers whose values the recording replaces with
	// Redacted, in addition to DefaultRedactHeaders. Redacted request
	// headers are left out of matching (their values are not kept).
	RedactHeaders []string
	// KeepSecrets records every header as sent and received, the default
	// ones included (opt-out of redaction).
	KeepSecrets bool
	// Secret, when not empty, is the password every request and CONNECT
	// must carry as proxy credentials (Proxy-Authorization: Basic, user
	// "perflab"); ClientURL and Env include it. Other clients are answered
	// 407 and nothing of theirs is forwarded or recorded.
	Secret string
	// AllowConn, when set, vets each accepted connection before a byte is
	// read (e.g. that it comes through adb reverse); a refused one is
	// answered 407 and closed.
	AllowConn func(c net.Conn) error
}

// ProxyUser is the user name of the proxy credentials.
const ProxyUser = "perflab"

// NewSecret returns a fresh random per-run proxy password.
func NewSecret() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TrialStats counts what the proxy did during one trial.
type TrialStats struct {
	Requests  int      `json:"requests"`
	Recorded  int      `json:"recorded"`
	Replayed  int      `json:"replayed"`
	Forwarded int      `json:"forwarded"` // off mode and unrecorded tunnels
	Unmatched int      `json:"unmatched"` // replay mode: no recording
	Failed    int      `json:"failed"`    // upstream errors, oversized bodies
	Refused   int      `json:"refused"`   // clients without the run's credentials (407)
	Errors    []string `json:"errors,omitempty"`
}

// maxErrors bounds the error texts kept per trial.
const maxErrors = 10

// Err summarises the trial's proxy errors, or returns nil when there were
// none. Unmatched requests in replay mode are errors: the trial saw a
// network the recording does not describe.
func (s TrialStats) Err() error {
	if s.Unmatched == 0 && s.Failed == 0 {
		return nil
	}
	var parts []string
	if s.Unmatched > 0 {
		parts = append(parts, fmt.Sprintf("%d unmatched request(s)", s.Unmatched))
	}
	if s.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed request(s)", s.Failed))
	}
	msg := "proxy: " + strings.Join(parts, ", ")
	if len(s.Errors) > 0 {
		msg += ": " + s.Errors[0]
		if len(s.Errors) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(s.Errors)-1)
		}
	}
	return errors.New(msg)
}

func (s *TrialStats) addError(msg string) {
	if len(s.Errors) < maxErrors {
		s.Errors = append(s.Errors, msg)
	}
}

// Proxy is a running record/replay proxy. Its methods are safe for
// concurrent use.
type Proxy struct {
	cfg   Config
	m     *matcher
	ln    net.Listener
	srv   *http.Server
	rp    *httputil.ReverseProxy
	ca    *authority // nil when HTTPS is tunnelled
	timer func(ctx context.Context, d time.Duration) error

	mu       sync.Mutex
	mode     string
	index    map[reqKey][]*Exchange
	byURL    map[string][]*Exchange // method + " " + normalised URL
	builds   map[string]int         // exchanges per build
	n        int
	redact   map[string]bool // canonical header names; nil keeps secrets
	w        *writer
	problems []LineError
	trial    trialState
	total    TrialStats
	closed   bool
	done     chan struct{}
	inflight int        // requests and TLS handshakes being handled
	settled  *sync.Cond // signalled when inflight drops to 0 (on mu)
}

type trialState struct {
	index int
	build string
	seq   int
	occ   map[reqKey]int
	stats TrialStats
}

// Start validates cfg, loads the recording when there is one, and starts
// serving on a loopback port.
func Start(cfg Config) (*Proxy, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeOff
	}
	if err := checkMode(cfg.Mode); err != nil {
		return nil, err
	}
	switch cfg.Timing {
	case "":
		cfg.Timing = TimingRecorded
	case TimingRecorded, TimingNone:
	default:
		return nil, fmt.Errorf("proxy: timing %q: want %q or %q", cfg.Timing, TimingRecorded, TimingNone)
	}
	if cfg.Target != "" {
		u, err := url.Parse(cfg.Target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("proxy: target %q: want an origin such as http://api.example.com", cfg.Target)
		}
	}
	if cfg.Mode != ModeOff && cfg.File == "" {
		return nil, fmt.Errorf("proxy: mode %s needs a recording file", cfg.Mode)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if err := checkLoopback(cfg.Addr); err != nil {
		return nil, err
	}
	if cfg.Transport == nil {
		cfg.Transport = &http.Transport{
			Proxy:                 nil, // never through another proxy, least of all ourselves
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	// Redacted request headers cannot be matched: their values are gone.
	ignore := cfg.IgnoreHeaders
	var redactNames map[string]bool
	if !cfg.KeepSecrets {
		redactNames = map[string]bool{}
		for _, h := range append(append([]string(nil), DefaultRedactHeaders...), cfg.RedactHeaders...) {
			redactNames[http.CanonicalHeaderKey(h)] = true
		}
		ignore = append(append([]string(nil), ignore...), DefaultRedactHeaders...)
		ignore = append(ignore, cfg.RedactHeaders...)
	}
	p := &Proxy{
		cfg:    cfg,
		m:      newMatcher(ignore, cfg.IgnoreQuery),
		redact: redactNames,
		mode:   cfg.Mode,
		index:  map[reqKey][]*Exchange{},
		byURL:  map[string][]*Exchange{},
		builds: map[string]int{},
		timer:  lab.Sleep,
		done:   make(chan struct{}),
	}
	p.trial.index = -1
	p.trial.occ = map[reqKey]int{}
	p.settled = sync.NewCond(&p.mu)
	if cfg.File != "" {
		rec, err := Load(cfg.File)
		switch {
		case err == nil:
			p.problems = rec.Problems
			for i := range rec.Exchanges {
				p.add(&rec.Exchanges[i])
			}
		case errors.Is(err, os.ErrNotExist):
			if cfg.Mode == ModeReplay {
				return nil, fmt.Errorf("proxy: replay needs a recording: %s does not exist (record first: controls.proxy \"record\")", cfg.File)
			}
		default:
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			rc := pr.In.Context().Value(ctxKey{}).(*reqCtx)
			pr.Out.URL = rc.url
			pr.Out.Host = ""
		},
		Transport:     (*captureTransport)(p),
		FlushInterval: -1,
		ErrorHandler:  p.upstreamError,
	}
	if !cfg.TunnelHTTPS {
		ca, err := newAuthority()
		if err != nil {
			return nil, fmt.Errorf("proxy: certificate authority for HTTPS: %w", err)
		}
		p.ca = ca
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		p.ca.close()
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if cfg.AllowConn != nil {
		ln = &vettingListener{Listener: ln, p: p}
	}
	p.ln = ln
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(p.done)
		p.srv.Serve(ln)
	}()
	return p, nil
}

func checkMode(m string) error {
	switch m {
	case ModeOff, ModeRecord, ModeReplay:
		return nil
	}
	return fmt.Errorf("proxy: mode %q: want off, record or replay", m)
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("proxy: listen address %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("proxy: listen address %q: the proxy binds to loopback only (127.0.0.1 or ::1)", addr)
	}
	return nil
}

// add indexes one exchange; p.mu must be held or p not yet shared.
func (p *Proxy) add(x *Exchange) {
	k := p.m.key(x.Method, x.URL, x.ReqHeader, x.BodySHA256)
	p.index[k] = append(p.index[k], x)
	uk := k.method + " " + k.url
	p.byURL[uk] = append(p.byURL[uk], x)
	p.builds[x.Build]++
	p.n++
}

// Addr is the proxy's listen address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's address without credentials, "http://127.0.0.1:PORT",
// for display (ClientURL is what clients configure).
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// ClientURL is the proxy's address as the build under test configures it,
// with the run's credentials when the proxy requires them:
// "http://perflab:SECRET@127.0.0.1:PORT".
func (p *Proxy) ClientURL() string {
	if p.cfg.Secret == "" {
		return p.URL()
	}
	return (&url.URL{Scheme: "http", User: url.UserPassword(ProxyUser, p.cfg.Secret), Host: p.Addr()}).String()
}

// Authorization is the Proxy-Authorization value the proxy requires, ""
// when it requires none.
func (p *Proxy) Authorization() string {
	if p.cfg.Secret == "" {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(ProxyUser+":"+p.cfg.Secret))
}

// Redacting lists the headers whose values recordings replace with
// Redacted, sorted; empty when secrets are kept.
func (p *Proxy) Redacting() []string {
	var out []string
	for h := range p.redact {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// Port is the proxy's TCP port, for `adb reverse tcp:PORT tcp:PORT`.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Env returns the environment entries that send a command's HTTP and HTTPS
// traffic through the proxy, upper- and lower-case as tools differ, with
// NO_PROXY cleared so nothing bypasses it. When the proxy decrypts HTTPS,
// the CA variables of OpenSSL and Go (SSL_CERT_FILE), curl, Python requests
// and Node point at its authority. Go programs never proxy requests to
// loopback hosts whatever the environment says.
func (p *Proxy) Env() []string {
	u := p.ClientURL()
	env := []string{
		"HTTP_PROXY=" + u, "http_proxy=" + u,
		"HTTPS_PROXY=" + u, "https_proxy=" + u,
		"NO_PROXY=", "no_proxy=",
	}
	if a := p.Authorization(); a != "" {
		// For a build that talks to the proxy directly (proxy.target).
		env = append(env, "PERFLAB_PROXY_AUTHORIZATION="+a)
	}
	if f := p.CAFile(); f != "" {
		env = append(env, "SSL_CERT_FILE="+f, "CURL_CA_BUNDLE="+f, "REQUESTS_CA_BUNDLE="+f, "NODE_EXTRA_CA_CERTS="+f)
	}
	return env
}

// Mode returns the current mode.
func (p *Proxy) Mode() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches between off, record and replay; requests already in
// flight finish in the mode they started in. Record mode needs a file.
func (p *Proxy) SetMode(mode string) error {
	if err := checkMode(mode); err != nil {
		return err
	}
	if mode != ModeOff && p.cfg.File == "" {
		return fmt.Errorf("proxy: mode %s needs a recording file", mode)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
	return nil
}

// Has reports whether the recording holds exchanges made by build.
func (p *Proxy) Has(build string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.builds[build] > 0
}

// Exchanges is the number of recorded exchanges available for replay.
func (p *Proxy) Exchanges() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Problems lists lines of the recording that could not be read.
func (p *Proxy) Problems() []LineError { return p.problems }

// File is the recording's path.
func (p *Proxy) File() string { return p.cfg.File }

// BeginTrial attributes the requests that follow to trial index of build
// and restarts the per-trial occurrence counts, so the k-th identical
// request of a replayed trial gets the k-th recorded response.
func (p *Proxy) BeginTrial(index int, build string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trial = trialState{index: index, build: build, occ: map[reqKey]int{}}
}

// SettleTimeout bounds how long EndTrial waits for requests still in
// flight when the trial's command has already finished.
const SettleTimeout = 2 * time.Second

// EndTrial waits (up to SettleTimeout) for requests still in flight, so
// they count toward the trial, then returns what happened since BeginTrial
// and syncs new recordings to disk.
func (p *Proxy) EndTrial() (TrialStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight > 0 {
		t := time.AfterFunc(SettleTimeout, func() {
			p.mu.Lock()
			p.settled.Broadcast()
			p.mu.Unlock()
		})
		deadline := time.Now().Add(SettleTimeout)
		for p.inflight > 0 && time.Now().Before(deadline) {
			p.settled.Wait()
		}
		t.Stop()
	}
	s := p.trial.stats
	p.trial = trialState{index: -1, occ: map[reqKey]int{}}
	var err error
	if p.w != nil {
		err = p.w.sync()
	}
	return s, err
}

// Total returns the counts over the proxy's whole life.
func (p *Proxy) Total() TrialStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
}

// Close stops serving, waits for the server to stop and closes the recording.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		p.srv.Close()
	}
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil {
		if e := p.w.close(); err == nil {
			err = e
		}
		p.w = nil
	}
	p.ca.close()
	return err
}

// begin and end bracket work EndTrial should wait for.
func (p *Proxy) begin() {
	p.mu.Lock()
	p.inflight++
	p.mu.Unlock()
}

func (p *Proxy) end() {
	p.mu.Lock()
	p.inflight--
	if p.inflight == 0 {
		p.settled.Broadcast()
	}
	p.mu.Unlock()
}

// count applies f to the current trial's and the total stats.
func (p *Proxy) count(f func(s *TrialStats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.trial.stats)
	f(&p.total)
}
