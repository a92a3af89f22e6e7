package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkReplay measures one replayed request through the proxy (keep-alive
// client, recorded timing off): the proxy's own overhead per request.
func BenchmarkReplay(b *testing.B) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 4096))
	}))
	file := filepath.Join(b.TempDir(), "b.proxy.jsonl")
	rec, err := Start(Config{File: file, Mode: ModeRecord})
	if err != nil {
		b.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(mustURL(rec.URL()))}}
	r, err := c.Get(origin.URL + "/feed?page=1")
	if err != nil {
		b.Fatal(err)
	}
	r.Body.Close()
	rec.Close()
	origin.Close()
	rep, err := Start(Config{File: file, Mode: ModeReplay, Timing: TimingNone})
	if err != nil {
		b.Fatal(err)
	}
	defer rep.Close()
	c = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(mustURL(rep.URL()))}}
	rep.BeginTrial(0, "")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := c.Get(origin.URL + "/feed?page=1")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			b.Fatalf("status %d", r.StatusCode)
		}
	}
	b.StopTimer()
	if st, _ := rep.EndTrial(); st.Unmatched != 0 {
		b.Fatalf("%+v", st)
	}
}
