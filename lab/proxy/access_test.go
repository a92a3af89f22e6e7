package proxy

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recorded returns the exchanges in a recording file (none when it does
// not exist).
func recorded(t *testing.T, file string) []Exchange {
	t.Helper()
	rec, err := Load(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec.Exchanges
}

// TestProxyRefusesClientsWithoutTheSecret: with a per-run secret, a local
// client that does not have it (no credentials, wrong ones, plain or
// CONNECT) gets 407 and nothing of its reaches the origin or the
// recording; the build's own client, configured from Env, works.
func TestProxyRefusesClientsWithoutTheSecret(t *testing.T) {
	srv, hits := origin(t)
	file := filepath.Join(t.TempDir(), "s.proxy.jsonl")
	p := start(t, Config{File: file, Mode: ModeRecord, Secret: NewSecret()})
	p.BeginTrial(0, "control")

	bare, _ := url.Parse(p.URL())
	wrong, _ := url.Parse(p.URL())
	wrong.User = url.UserPassword(ProxyUser, "guess")
	for name, u := range map[string]*url.URL{"no credentials": bare, "wrong credentials": wrong} {
		tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		c := &http.Client{Transport: tr, Timeout: time.Minute}
		if r := do(t, c, "GET", srv.URL+"/feed?page=1", "", nil); r.status != http.StatusProxyAuthRequired {
			t.Errorf("%s: GET answered %d %q, want 407", name, r.status, r.body)
		}
		// HTTPS through CONNECT: the client sees the refusal as an error.
		if _, err := c.Get("https://" + strings.TrimPrefix(srv.URL, "http://") + "/feed"); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
			t.Errorf("%s: CONNECT: %v, want a 407 refusal", name, err)
		}
		tr.CloseIdleConnections()
	}
	if hits.Load() != 0 {
		t.Errorf("the origin saw %d requests from refused clients", hits.Load())
	}
	st, err := p.EndTrial()
	if err != nil {
		t.Fatal(err)
	}
	if st.Refused != 4 || st.Recorded != 0 || st.Err() != nil {
		t.Errorf("stats %+v: want 4 refused, nothing recorded, no trial failure", st)
	}
	if x := recorded(t, file); len(x) != 0 {
		t.Fatalf("refused requests were recorded: %+v", x)
	}

	// The build under test gets the credentials through its environment.
	var proxyURL string
	for _, kv := range p.Env() {
		if v, ok := strings.CutPrefix(kv, "HTTP_PROXY="); ok {
			proxyURL = v
		}
	}
	if proxyURL != p.ClientURL() || !strings.Contains(proxyURL, ProxyUser+":") || strings.Contains(p.URL(), "@") {
		t.Fatalf("HTTP_PROXY=%s, ClientURL %s, URL %s", proxyURL, p.ClientURL(), p.URL())
	}
	p.BeginTrial(1, "control")
	if r := do(t, client(t, p), "GET", srv.URL+"/feed?page=2", "", nil); r.status != 200 {
		t.Fatalf("the build's own request: %d %q", r.status, r.body)
	}
	p.EndTrial()
	p.Close()
	x := recorded(t, file)
	if len(x) != 1 || !strings.HasSuffix(x[0].URL, "page=2") || x[0].ReqHeader.Get("Proxy-Authorization") != "" {
		t.Errorf("recording %+v: want only the build's request, without its proxy credentials", x)
	}
}

// TestProxyAllowConnRefusesBeforeReading: a connection the filter refuses
// is answered 407 and closed before its request is read.
func TestProxyAllowConnRefusesBeforeReading(t *testing.T) {
	srv, hits := origin(t)
	file := filepath.Join(t.TempDir(), "s.proxy.jsonl")
	p := start(t, Config{File: file, Mode: ModeRecord, AllowConn: func(c net.Conn) error {
		return fmt.Errorf("connection from %s does not come through adb reverse", c.RemoteAddr())
	}})
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s/feed HTTP/1.1\r\nHost: x\r\n\r\n", srv.URL)
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	r, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusProxyAuthRequired || !strings.Contains(string(body), "adb reverse") {
		t.Errorf("refused connection answered %d %q", r.StatusCode, body)
	}
	if hits.Load() != 0 || len(recorded(t, file)) != 0 || p.Total().Refused != 1 {
		t.Errorf("origin hits %d, recorded %d, refused %d", hits.Load(), len(recorded(t, file)), p.Total().Refused)
	}
}

// TestRecordingRedactsSecrets: credentials and cookies (and configured
// headers) never reach the recording file, which only its owner can read;
// replay still matches requests whose credentials differ; proxy.redact
// false keeps everything.
func TestRecordingRedactsSecrets(t *testing.T) {
	srv, _ := origin(t)
	secretHeaders := map[string]string{"Authorization": "Bearer s3cret-token", "Cookie": "sid=s3cret-cookie", "X-Api-Key": "s3cret-key", "X-Build": "a"}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "s.proxy.jsonl")
			os.WriteFile(file, []byte(`{"format":"perflab-proxy","version":1}`+"\n"), 0o644) // as an earlier perflab left it
			p := start(t, Config{File: file, Mode: ModeRecord, RedactHeaders: []string{"x-api-key"}, KeepSecrets: keep, Secret: NewSecret()})
			p.BeginTrial(0, "control")
			c := client(t, p)
			do(t, c, "GET", srv.URL+"/who", "", secretHeaders)
			p.EndTrial()
			p.Close()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
				t.Errorf("recording mode %v, want 0600", st.Mode().Perm())
			}
			if strings.Contains(string(data), "Proxy-Authorization") {
				t.Errorf("the proxy credentials were recorded:\n%s", data)
			}
			leaked := strings.Contains(string(data), "s3cret")
			if leaked != keep {
				t.Errorf("secrets in the recording: %v, want %v:\n%s", leaked, keep, data)
			}
			if !keep && strings.Count(string(data), Redacted) != 3 {
				t.Errorf("want 3 redacted values:\n%s", data)
			}
			// A replay with other credentials still matches (redacted
			// headers are not matched on).
			rp := start(t, Config{File: file, Mode: ModeReplay, Timing: TimingNone, RedactHeaders: []string{"X-Api-Key"}, KeepSecrets: keep})
			rp.BeginTrial(1, "control")
			other := map[string]string{"Authorization": "Bearer other", "Cookie": "sid=other", "X-Api-Key": "other", "X-Build": "a"}
			r := do(t, client(t, rp), "GET", srv.URL+"/who", "", other)
			st, _ := rp.EndTrial()
			if wantMatch := !keep; (r.status == 200) != wantMatch {
				t.Errorf("replay with other credentials: %d %q (stats %+v)", r.status, r.body, st)
			}
		})
	}
}
