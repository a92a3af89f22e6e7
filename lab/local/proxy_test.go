package local

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/proxy"
)

// runAll runs exp on a fresh local device and returns its trials.
func runAll(t *testing.T, exp *lab.Experiment) ([]lab.Trial, *lab.End) {
	t.Helper()
	d := New()
	defer d.Close()
	var trials []lab.Trial
	var end *lab.End
	for e := range lab.NewRunner(d, exp).Run(context.Background()) {
		if e.Trial != nil {
			trials = append(trials, *e.Trial)
		}
		if e.End != nil {
			end = e.End
		}
	}
	return trials, end
}

func TestProxyRecordOncePerBuildThenReplay(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	var mu sync.Mutex
	hits := map[string]int{}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.RequestURI()]++
		mu.Unlock()
		fmt.Fprintf(w, "body of %s", r.URL.RequestURI())
	}))
	defer origin.Close()
	file := filepath.Join(t.TempDir(), "s.proxy.jsonl")
	// Each build fetches its own page and checks the answer.
	cmd := func(path string) []string {
		return []string{"sh", "-c", fmt.Sprintf(`test "$(curl -s %s%s)" = "body of %s"`, origin.URL, path, path)}
	}
	exp := &lab.Experiment{Device: "local", Trials: 3, Order: lab.OrderAlternate, Seed: 1,
		Builds: map[string]lab.Build{
			lab.ArmControl:   {Command: cmd("/a"), Dir: t.TempDir()},
			lab.ArmTreatment: {Command: cmd("/b"), Dir: t.TempDir()},
		},
		Metrics:  []string{MetricWall},
		Controls: lab.Controls{Proxy: proxy.ModeReplay},
		Proxy:    &lab.ProxyOptions{File: file, Timing: proxy.TimingNone},
	}
	trials, end := runAll(t, exp)
	if end.Reason != "completed" || len(trials) != 6 {
		t.Fatalf("end %+v, %d trials", end, len(trials))
	}
	for _, tr := range trials {
		if tr.Status != lab.StatusOK {
			t.Fatalf("trial %d: %s %s", tr.Index, tr.Status, tr.Reason)
		}
	}
	if hits["/a"] != 1 || hits["/b"] != 1 {
		t.Fatalf("origin hits %v: want one recording pass per build", hits)
	}
	// A second run replays the same file without recording again.
	origin.Close()
	trials, end = runAll(t, exp)
	if end.Reason != "completed" {
		t.Fatalf("second run: %+v", end)
	}
	for _, tr := range trials {
		if tr.Status != lab.StatusOK {
			t.Fatalf("second run trial %d: %s", tr.Index, tr.Reason)
		}
	}
	rec, err := proxy.Load(file)
	if err != nil || len(rec.Exchanges) != 2 {
		t.Fatalf("recording: %v, %d exchanges", err, len(rec.Exchanges))
	}
}

func TestProxyUnmatchedRequestFailsItsTrial(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	defer origin.Close()
	// The URL changes with the trial index, so only the recorded trial's
	// request can be answered.
	d := setup(t, `curl -s "`+origin.URL+`/feed?trial=$PERFLAB_TRIAL" >/dev/null`, func(e *lab.Experiment) {
		e.Controls.Proxy = proxy.ModeReplay
		e.Proxy = &lab.ProxyOptions{Timing: proxy.TimingNone}
	})
	run := func(i int) lab.TrialResult {
		b := d.exp.Builds[lab.ArmControl]
		return d.RunTrial(context.Background(), lab.TrialRequest{Index: i, Arm: lab.ArmControl, BuildKey: lab.ArmControl,
			Build: b, Controls: d.exp.Controls})
	}
	if r := run(0); r.Status != lab.StatusOK {
		t.Fatalf("recorded trial: %s %s", r.Status, r.Reason)
	}
	r := run(1)
	if r.Status != lab.StatusFailed || !strings.Contains(r.Reason, "1 unmatched request") || !strings.Contains(r.Reason, "trial=1") {
		t.Fatalf("unmatched trial: %s %q", r.Status, r.Reason)
	}
	// Ignoring the parameter makes it match.
	d2 := setup(t, `curl -s "`+origin.URL+`/feed?trial=$PERFLAB_TRIAL" >/dev/null`, func(e *lab.Experiment) {
		e.Controls.Proxy = proxy.ModeReplay
		e.Proxy = &lab.ProxyOptions{Timing: proxy.TimingNone, IgnoreQuery: []string{"trial"}}
	})
	d = d2
	for i := 0; i < 3; i++ {
		if r := run(i); r.Status != lab.StatusOK {
			t.Fatalf("trial %d with ignore_query: %s", i, r.Reason)
		}
	}
	if !d.Info().Has(lab.CapProxy) {
		t.Fatal("local device does not list the proxy capability")
	}
}
