package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/perflab/perflab/lab"
)

func TestControllerFlow(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "v%d", hits.Load())
	}))
	defer origin.Close()
	exp := &lab.Experiment{Proxy: &lab.ProxyOptions{Timing: TimingNone, IgnoreQuery: []string{"n"}}}
	dir := t.TempDir()
	c, err := NewController(exp, dir, Access{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if f := c.Proxy().File(); f != filepath.Join(dir, "run.proxy.jsonl") {
		t.Fatalf("default file %s", f)
	}
	cl := client(t, c.Proxy())
	// run is one trial of a build that fetches /page once and reports what
	// it got as a metric (v1 = the first answer the origin ever gave).
	var got []string
	run := func(path string) func() lab.TrialResult {
		return func() lab.TrialResult {
			r := do(t, cl, "GET", origin.URL+path, "", nil)
			got = append(got, r.body)
			return lab.TrialResult{Status: lab.StatusOK}
		}
	}
	trial := func(i int, build, mode, path string) lab.TrialResult {
		return c.Trial(lab.TrialRequest{Index: i, BuildKey: build, Controls: lab.Controls{Proxy: mode}}, run(path))
	}
	// Replay: the first trial of each build is preceded by a recording pass.
	for i, b := range []string{"control", "treatment", "control", "treatment"} {
		if r := trial(i, b, ModeReplay, "/page?n="+fmt.Sprint(i)); r.Status != lab.StatusOK {
			t.Fatalf("trial %d: %s", i, r.Reason)
		}
	}
	if want := "v1 v1 v2 v2 v1 v2"; strings.Join(got, " ") != want || hits.Load() != 2 {
		t.Fatalf("answers %v (origin hit %d times), want %s", got, hits.Load(), want)
	}
	// An unmatched request fails an otherwise good trial.
	r := trial(4, "control", ModeReplay, "/other")
	if r.Status != lab.StatusFailed || !strings.Contains(r.Reason, "unmatched") || !strings.Contains(r.Reason, "/other") {
		t.Fatalf("unmatched: %+v", r)
	}
	// Live control: proxy off forwards without recording.
	n := hits.Load()
	if r := trial(5, "control", ModeOff, "/other"); r.Status != lab.StatusOK || hits.Load() != n+1 {
		t.Fatalf("off: %+v, hits %d", r, hits.Load()-n)
	}
	if c.Proxy().Exchanges() != 2 {
		t.Fatalf("off mode recorded: %d exchanges", c.Proxy().Exchanges())
	}
	// A failing recording pass fails the trial and says so.
	c2, err := NewController(&lab.Experiment{}, t.TempDir(), Access{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r = c2.Trial(lab.TrialRequest{BuildKey: "control", Controls: lab.Controls{Proxy: ModeReplay}},
		func() lab.TrialResult { return lab.TrialResult{Status: lab.StatusFailed, Reason: "exit status 1"} })
	if r.Status != lab.StatusFailed || r.Reason != "proxy recording pass: exit status 1" {
		t.Fatalf("failed pass: %+v", r)
	}
	detail := map[string]string{}
	c.Detail(detail)
	if detail["proxy_exchanges"] != "2" || !strings.HasPrefix(detail["proxy"], "http://127.0.0.1:") || !strings.Contains(detail["proxy_https"], "intercepted") {
		t.Fatalf("detail %v", detail)
	}
	if _, err := NewController(&lab.Experiment{Proxy: &lab.ProxyOptions{HTTPS: "maybe"}}, t.TempDir(), Access{}); err == nil || !strings.Contains(err.Error(), "proxy.https") {
		t.Fatalf("bad https option: %v", err)
	}
}
