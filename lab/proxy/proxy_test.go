package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// origin is a real HTTP server on loopback whose answers show which
// request and which occurrence they belong to.
func origin(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/feed", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"page":%q}`, r.URL.Query().Get("page"))
	})
	var n atomic.Int64
	mux.HandleFunc("/count", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "%d", n.Add(1))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Len", fmt.Sprint(len(b)))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "got %s", b)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		time.Sleep(60 * time.Millisecond)
		io.WriteString(w, "slow")
	})
	mux.HandleFunc("/who", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, r.Header.Get("X-Build"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &hits
}

// client is a real HTTP client configured to use the proxy.
func client(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	u, _ := url.Parse(p.ClientURL())
	tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

func start(t *testing.T, cfg Config) *Proxy {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

type resp struct {
	status int
	body   string
	header http.Header
}

func do(t *testing.T, c *http.Client, method, u, body string, hdr map[string]string) resp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	r, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return resp{r.StatusCode, string(b), r.Header}
}

func TestRecordThenReplayWithoutNetwork(t *testing.T) {
	srv, hits := origin(t)
	file := filepath.Join(t.TempDir(), "s.proxy.jsonl")

	rec := start(t, Config{File: file, Mode: ModeRecord})
	c := client(t, rec)
	rec.BeginTrial(0, "control")
	r := do(t, c, "GET", srv.URL+"/feed?page=1&ts=111", "", nil)
	if r.status != 200 || r.body != `{"page":"1"}` {
		t.Fatalf("record: got %d %q", r.status, r.body)
	}
	r = do(t, c, "POST", srv.URL+"/echo", "hello", nil)
	if r.status != 201 || r.body != "got hello" {
		t.Fatalf("record: got %d %q", r.status, r.body)
	}
	for i := 1; i <= 3; i++ {
		if r := do(t, c, "GET", srv.URL+"/count", "", nil); r.body != fmt.Sprint(i) {
			t.Fatalf("record count %d: %q", i, r.body)
		}
	}
	st, err := rec.EndTrial()
	if err != nil || st.Requests != 5 || st.Recorded != 5 || st.Err() != nil {
		t.Fatalf("record stats %+v, %v", st, err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	// The origin goes away: replay must not need it.
	srv.Close()
	before := hits.Load()

	loaded, err := Load(file)
	if err != nil || len(loaded.Exchanges) != 5 || len(loaded.Problems) != 0 {
		t.Fatalf("load: %v, %d exchanges, problems %v", err, len(loaded.Exchanges), loaded.Problems)
	}
	if x := loaded.Exchanges[1]; x.Method != "POST" || x.BodySHA256 != bodyHash([]byte("hello")) || x.Status != 201 || x.Build != "control" {
		t.Fatalf("recorded exchange %+v", x)
	}

	rep := start(t, Config{File: file, Mode: ModeReplay, IgnoreQuery: []string{"ts"}, Timing: TimingNone})
	c = client(t, rep)
	for trial := 1; trial <= 2; trial++ {
		rep.BeginTrial(trial, "control")
		// Query order and the ignored ts parameter do not matter.
		r := do(t, c, "GET", srv.URL+"/feed?ts=999&page=1", "", nil)
		if r.status != 200 || r.body != `{"page":"1"}` || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("replay feed: %d %q %v", r.status, r.body, r.header)
		}
		r = do(t, c, "POST", srv.URL+"/echo", "hello", nil)
		if r.status != 201 || r.body != "got hello" || r.header.Get("X-Len") != "5" {
			t.Fatalf("replay echo: %d %q", r.status, r.body)
		}
		// Each trial gets the recorded sequence again.
		for i := 1; i <= 3; i++ {
			if r := do(t, c, "GET", srv.URL+"/count", "", nil); r.body != fmt.Sprint(i) {
				t.Fatalf("trial %d replay count %d: %q", trial, i, r.body)
			}
		}
		st, _ := rep.EndTrial()
		if st.Replayed != 5 || st.Unmatched != 0 || st.Err() != nil {
			t.Fatalf("trial %d stats %+v", trial, st)
		}
	}

	// Unmatched: a different body, a different page, an unknown path.
	rep.BeginTrial(3, "control")
	if r := do(t, c, "POST", srv.URL+"/echo", "other", nil); r.status != http.StatusBadGateway || !strings.Contains(r.body, "request body differs") {
		t.Fatalf("unmatched body: %d %q", r.status, r.body)
	}
	if r := do(t, c, "GET", srv.URL+"/feed?page=2", "", nil); r.status != http.StatusBadGateway {
		t.Fatalf("unmatched page: %d %q", r.status, r.body)
	}
	if r := do(t, c, "GET", srv.URL+"/nope", "", nil); r.status != http.StatusBadGateway || !strings.Contains(r.body, "none for this method and URL") {
		t.Fatalf("unmatched path: %d %q", r.status, r.body)
	}
	do(t, c, "GET", srv.URL+"/feed?page=1", "", nil) // still fine
	st, _ = rep.EndTrial()
	if st.Unmatched != 3 || st.Replayed != 1 || st.Requests != 4 {
		t.Fatalf("unmatched stats %+v", st)
	}
	err = st.Err()
	if err == nil || !strings.Contains(err.Error(), "3 unmatched request(s)") || !strings.Contains(err.Error(), "POST") {
		t.Fatalf("unmatched error: %v", err)
	}
	if hits.Load() != before {
		t.Fatalf("replay reached the origin %d times", hits.Load()-before)
	}
	if tot := rep.Total(); tot.Unmatched != 3 || tot.Replayed != 11 {
		t.Fatalf("total %+v", tot)
	}
}

func TestReplayKeepsRecordedTiming(t *testing.T) {
	srv, _ := origin(t)
	file := filepath.Join(t.TempDir(), "t.proxy.jsonl")
	rec := start(t, Config{File: file, Mode: ModeRecord})
	rec.BeginTrial(0, "control")
	do(t, client(t, rec), "GET", srv.URL+"/slow", "", nil)
	rec.EndTrial()
	rec.Close()
	x, _ := Load(file)
	if got := x.Exchanges[0].TTFBMs; got < 55 {
		t.Fatalf("recorded ttfb %.1f ms, the origin waits 60 ms", got)
	}
	for _, tc := range []struct {
		timing  string
		atLeast time.Duration
	}{{TimingRecorded, 55 * time.Millisecond}, {TimingNone, 0}} {
		rep := start(t, Config{File: file, Mode: ModeReplay, Timing: tc.timing})
		c := client(t, rep)
		t0 := time.Now()
		r := do(t, c, "GET", srv.URL+"/slow", "", nil)
		if r.body != "slow" {
			t.Fatalf("%s: %q", tc.timing, r.body)
		}
		if d := time.Since(t0); d < tc.atLeast {
			t.Fatalf("%s: replay took %v, recorded timing asks at least %v", tc.timing, d, tc.atLeast)
		}
	}
}

func TestMatchingHeadersAndBuilds(t *testing.T) {
	srv, _ := origin(t)
	file := filepath.Join(t.TempDir(), "h.proxy.jsonl")
	rec := start(t, Config{File: file, Mode: ModeRecord})
	c := client(t, rec)
	for _, b := range []string{"control", "treatment"} {
		rec.BeginTrial(0, b)
		do(t, c, "GET", srv.URL+"/who", "", map[string]string{"X-Build": b, "X-Request-Id": "r1", "X-Session": "s1"})
		rec.EndTrial()
	}
	rec.BeginTrial(2, "control")
	do(t, c, "GET", srv.URL+"/feed?page=1", "", nil)
	rec.EndTrial()
	rec.Close()

	check := func(p *Proxy, build string, hdr map[string]string, wantStatus int, wantBody string) {
		t.Helper()
		p.BeginTrial(5, build)
		r := do(t, client(t, p), "GET", srv.URL+"/who", "", hdr)
		p.EndTrial()
		if r.status != wantStatus || (wantBody != "" && !strings.Contains(r.body, wantBody)) {
			t.Fatalf("%s %v: got %d %q, want %d %q", build, hdr, r.status, r.body, wantStatus, wantBody)
		}
	}
	strict := start(t, Config{File: file, Mode: ModeReplay, Timing: TimingNone})
	// X-Request-Id is volatile by default; X-Session is not.
	check(strict, "treatment", map[string]string{"X-Build": "treatment", "X-Request-Id": "r9", "X-Session": "s1"}, 200, "treatment")
	check(strict, "treatment", map[string]string{"X-Build": "treatment", "X-Session": "s2"}, 502, "headers differ: X-Session")
	loose := start(t, Config{File: file, Mode: ModeReplay, Timing: TimingNone, IgnoreHeaders: []string{"x-session"}})
	check(loose, "control", map[string]string{"X-Build": "control", "X-Session": "s2"}, 200, "control")
	// Ignoring every header, the build of the trial picks the recording.
	all := start(t, Config{File: file, Mode: ModeReplay, Timing: TimingNone, IgnoreHeaders: []string{"*"}})
	check(all, "treatment", nil, 200, "treatment")
	check(all, "control", nil, 200, "control")
	if !all.Has("treatment") || all.Has("other") || all.Exchanges() != 3 {
		t.Fatalf("Has/Exchanges wrong: %d", all.Exchanges())
	}
}

func TestLocalCommandThroughEnv(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	srv, hits := origin(t)
	file := filepath.Join(t.TempDir(), "c.proxy.jsonl")
	run := func(p *Proxy, u string) string {
		t.Helper()
		cmd := exec.Command(curl, "-s", "-S", u)
		cmd.Env = append(os.Environ(), p.Env()...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v: %s", err, out)
		}
		return string(out)
	}
	rec := start(t, Config{File: file, Mode: ModeRecord})
	rec.BeginTrial(0, "control")
	if got := run(rec, srv.URL+"/feed?page=7"); got != `{"page":"7"}` {
		t.Fatalf("curl via proxy: %q", got)
	}
	if st, _ := rec.EndTrial(); st.Recorded != 1 {
		t.Fatalf("curl was not proxied: %+v", st)
	}
	rec.Close()
	srv.Close()
	n := hits.Load()
	rep := start(t, Config{File: file, Mode: ModeReplay})
	rep.BeginTrial(1, "control")
	if got := run(rep, srv.URL+"/feed?page=7"); got != `{"page":"7"}` {
		t.Fatalf("curl replay: %q", got)
	}
	if st, _ := rep.EndTrial(); st.Replayed != 1 || hits.Load() != n {
		t.Fatalf("replay stats %+v", st)
	}
}

func TestHTTPSTunnel(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret")
	}))
	defer tlsSrv.Close()
	file := filepath.Join(t.TempDir(), "tls.proxy.jsonl")
	rec := start(t, Config{File: file, Mode: ModeRecord, TunnelHTTPS: true})
	if rec.CAFile() != "" || rec.CACertPEM() != nil {
		t.Fatal("tunnelling proxy has a CA")
	}
	rec.BeginTrial(0, "control")
	if r := do(t, client(t, rec), "GET", tlsSrv.URL+"/", "", nil); r.body != "secret" {
		t.Fatalf("tunnel: %q", r.body)
	}
	st, _ := rec.EndTrial()
	if st.Forwarded != 1 || len(st.Errors) != 1 || !strings.Contains(st.Errors[0], "not recorded") {
		t.Fatalf("tunnel stats %+v", st)
	}
	rec.SetMode(ModeReplay)
	rec.BeginTrial(1, "control")
	c := client(t, rec)
	if _, err := c.Get(tlsSrv.URL + "/"); err == nil {
		t.Fatal("HTTPS in replay mode reached the network")
	}
	if st, _ := rec.EndTrial(); st.Unmatched != 1 || st.Err() == nil {
		t.Fatalf("replay CONNECT stats %+v", st)
	}
}

// tlsClient trusts only the proxy's authority, as a command given Env does.
func tlsClient(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.CACertPEM()) {
		t.Fatal("bad CA PEM")
	}
	u, _ := url.Parse(p.URL())
	tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

func TestHTTPSRecordReplay(t *testing.T) {
	var hits atomic.Int64
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "secure %s %s", r.URL.Path, b)
	}))
	defer tlsSrv.Close()
	file := filepath.Join(t.TempDir(), "https.proxy.jsonl")
	// The proxy trusts the origin's test certificate upstream.
	rec := start(t, Config{File: file, Mode: ModeRecord, Transport: tlsSrv.Client().Transport})
	if _, err := os.Stat(rec.CAFile()); err != nil {
		t.Fatalf("CA file: %v", err)
	}
	rec.BeginTrial(0, "control")
	c := tlsClient(t, rec)
	if r := do(t, c, "POST", tlsSrv.URL+"/login", "user=a", nil); r.status != 200 || r.body != "secure /login user=a" {
		t.Fatalf("record over TLS: %d %q", r.status, r.body)
	}
	if st, _ := rec.EndTrial(); st.Recorded != 1 || st.Err() != nil {
		t.Fatalf("record stats %+v", st)
	}
	// A client that does not trust the authority fails, and the trial knows.
	rec.BeginTrial(1, "control")
	if _, err := (&http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(mustURL(rec.URL()))}}).Get(tlsSrv.URL + "/x"); err == nil {
		t.Fatal("untrusting client got through")
	}
	if st, _ := rec.EndTrial(); st.Failed != 1 || !strings.Contains(st.Errors[0], "trust the proxy's CA") {
		t.Fatalf("untrusting client stats %+v", st)
	}
	caFile := rec.CAFile()
	rec.Close()
	if _, err := os.Stat(caFile); !os.IsNotExist(err) {
		t.Errorf("CA file left behind: %v", err)
	}
	tlsSrv.Close()
	n := hits.Load()

	rep := start(t, Config{File: file, Mode: ModeReplay, Timing: TimingNone})
	c = tlsClient(t, rep)
	rep.BeginTrial(2, "control")
	if r := do(t, c, "POST", tlsSrv.URL+"/login", "user=a", nil); r.status != 200 || r.body != "secure /login user=a" {
		t.Fatalf("replay over TLS: %d %q", r.status, r.body)
	}
	if r := do(t, c, "POST", tlsSrv.URL+"/login", "user=b", nil); r.status != http.StatusBadGateway {
		t.Fatalf("unmatched over TLS: %d %q", r.status, r.body)
	}
	st, _ := rep.EndTrial()
	if st.Replayed != 1 || st.Unmatched != 1 || hits.Load() != n {
		t.Fatalf("replay stats %+v, origin hits %d", st, hits.Load()-n)
	}
	x, _ := Load(file)
	if !strings.HasPrefix(x.Exchanges[0].URL, "https://127.0.0.1:") {
		t.Errorf("recorded URL %q", x.Exchanges[0].URL)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestTargetOriginForRelativeRequests(t *testing.T) {
	srv, _ := origin(t)
	file := filepath.Join(t.TempDir(), "o.proxy.jsonl")
	rec := start(t, Config{File: file, Mode: ModeRecord, Target: srv.URL})
	// A plain client talking to the proxy as if it were the server, as an
	// app behind `adb reverse` does.
	r, err := http.Get(rec.URL() + "/feed?page=3")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(b) != `{"page":"3"}` {
		t.Fatalf("target: %q", b)
	}
	rec.Close()
	bare := start(t, Config{})
	r, err = http.Get(bare.URL() + "/feed")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusBadRequest {
		t.Fatalf("relative request without target: %d", r.StatusCode)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: "mirror"}, `mode "mirror"`},
		{Config{Mode: ModeRecord}, "needs a recording file"},
		{Config{Mode: ModeReplay, File: filepath.Join(dir, "missing.jsonl")}, "does not exist"},
		{Config{Addr: "0.0.0.0:0"}, "loopback only"},
		{Config{Timing: "fast"}, `timing "fast"`},
		{Config{Target: "api.example.com"}, "want an origin"},
	} {
		p, err := Start(tc.cfg)
		if err == nil {
			p.Close()
			t.Errorf("%+v: no error", tc.cfg)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %q, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestLoadReportsBadLines(t *testing.T) {
	dir := t.TempDir()
	good := `{"method":"GET","url":"http://a/x","body_sha256":"e3","status":200,"trial":0,"seq":0,"body_len":0,"ttfb_ms":1,"total_ms":1}`
	path := filepath.Join(dir, "r.proxy.jsonl")
	os.WriteFile(path, []byte(`{"format":"perflab-proxy","version":1}`+"\n"+good+"\n{\"method\":\n"+good+"\n"+`{"method":"GET","url":"http://a/y","bogus":1}`+"\n"+`{"method":"GET","ur`), 0o644)
	rec, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Exchanges) != 2 || len(rec.Problems) != 3 {
		t.Fatalf("exchanges %d problems %v", len(rec.Exchanges), rec.Problems)
	}
	for i, line := range []int{3, 5, 6} {
		if rec.Problems[i].Line != line || !strings.Contains(rec.Problems[i].Error(), "r.proxy.jsonl:") {
			t.Errorf("problem %d: %v, want line %d", i, rec.Problems[i], line)
		}
	}
	os.WriteFile(path, []byte("hello\n"), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "not a perflab proxy recording") {
		t.Fatalf("foreign file: %v", err)
	}
	if got := DefaultFile("/x/run.jsonl"); got != "/x/run.proxy.jsonl" {
		t.Fatal(got)
	}
}

func TestNormURL(t *testing.T) {
	m := newMatcher(nil, []string{"ts", "utm_*"})
	for _, tc := range []struct{ in, want string }{
		{"HTTP://Example.COM:80/a?b=2&a=1", "http://example.com/a?a=1&b=2"},
		{"https://x:443", "https://x/"},
		{"http://x:8080/p?ts=1&utm_source=z&k=v#frag", "http://x:8080/p?k=v"},
		{"http://x/p?k=2&k=1", "http://x/p?k=2&k=1"},
	} {
		if got := m.normURL(tc.in); got != tc.want {
			t.Errorf("normURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCurlHTTPSThroughEnv(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls ok")
	}))
	defer tlsSrv.Close()
	file := filepath.Join(t.TempDir(), "curl-tls.proxy.jsonl")
	p := start(t, Config{File: file, Mode: ModeRecord, Transport: tlsSrv.Client().Transport})
	p.BeginTrial(0, "control")
	cmd := exec.Command(curl, "-s", "-S", tlsSrv.URL+"/page")
	cmd.Env = append(os.Environ(), p.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "tls ok" {
		t.Fatalf("curl over HTTPS_PROXY: %v: %s", err, out)
	}
	if st, _ := p.EndTrial(); st.Recorded != 1 {
		t.Fatalf("curl's HTTPS request was not recorded: %+v", st)
	}
}
