package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/profdiff"
)

// profileExperiment is a short profiled experiment on the simulated feed
// app, whose treatment spends 20% more time in feed.decodeImage (the adb
// path installs it as its own package, sim.BuildPackage).
const profileExperiment = `{
  "builds": {
    "control": {"name": "feed", "app": "feed"},
    "treatment": {"name": "feed, decodeImage 20% slower", "app": "feed", "effect": {"function": "feed.decodeImage", "pct": 20}}
  },
  "trials": 16, "warmup": 1, "order": "alternate", "seed": 5,
  "profile": true,
  "metrics": ["startup_ms"],
  "controls": {"kill_app": true, "dismiss_dialogs": true}
}`

// runProfiled runs profileExperiment on adb:serial to its end and returns
// its session.
func runProfiled(t *testing.T, server, serial string) (string, *sessions.Session) {
	t.Helper()
	dir := t.TempDir()
	exp := filepath.Join(dir, "exp.json")
	if err := os.WriteFile(exp, []byte(profileExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	sess := filepath.Join(dir, "s.jsonl")
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"run", exp, "--device", "adb:" + serial, "--adb", server,
		"--headless", "--quiet", "--out", sess}, &out, &errb); code != 0 && code != 3 { // 3: the regression it is
		t.Fatalf("run on %s: exit %d\n%s\n%s", serial, code, out.String(), errb.String())
	}
	s, err := sessions.Load(sess)
	if err != nil {
		t.Fatal(err)
	}
	return sess, s
}

// TestProfileOnSimdeviceThroughADB profiles trials on a phone through a
// real adb server: simpleperf record around am start -W, its report read
// back and parsed, the app's phases from its span lines over adb reverse.
// The differential profile puts the slowed function first, with more
// samples in B (a judgement of sample counts on the simulated phone). A
// phone without simpleperf says so, and its run completes unprofiled.
func TestProfileOnSimdeviceThroughADB(t *testing.T) {
	// Its own adb server and phones on free ports: it overlaps the
	// package's other adb tests, mostly waiting on the wire.
	t.Parallel()
	srv := adbtest.StartServer(t)
	d := startSimdevice(t, srv, "pixel")
	sess, s := runProfiled(t, srv.Addr, d)
	profiled := 0
	for _, e := range s.Events {
		if e.Type == lab.EventTrial && e.Trial.Counted() {
			if p := e.Trial.Profile; p == nil || p.File == "" || p.Source != "simpleperf" || p.Samples < 100 || p.Note != "" {
				t.Errorf("trial %d: profile %+v", e.Trial.Index, p)
			} else {
				profiled++
			}
		}
	}
	r, err := profdiff.Analyze(sess, profdiff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if profiled != 32 || r.Pairs != 16 || len(r.Notes) != 0 || len(r.Functions) == 0 {
		t.Fatalf("%d profiled trials, %d pairs, notes %q, %d functions", profiled, r.Pairs, r.Notes, len(r.Functions))
	}
	for _, ph := range []string{"startup", "network", "first_frame"} {
		if !slices.Contains(r.Phases, ph) {
			t.Errorf("phases %v: no %s", r.Phases, ph)
		}
	}
	f := r.Functions[0]
	if f.Name != "feed.decodeImage" || f.SamplesB <= f.SamplesA {
		t.Errorf("first function %s (samples A %d, B %d), want feed.decodeImage with more samples in B", f.Name, f.SamplesA, f.SamplesB)
	}

	// A phone without simpleperf (as before Android 7.0).
	old := startSimdevice(t, srv, "pixel", "--no-simpleperf")
	_, s = runProfiled(t, srv.Addr, old)
	note, counted := "", 0
	for _, e := range s.Events {
		if e.Type == lab.EventSettings && e.Settings.Detail["profile"] != "" {
			note = e.Settings.Detail["profile"]
		}
		if e.Type == lab.EventTrial && e.Trial.Counted() {
			counted++
			if e.Trial.Profile != nil && e.Trial.Profile.File != "" {
				t.Errorf("trial %d has a profile on a phone without simpleperf", e.Trial.Index)
			}
		}
	}
	if !strings.Contains(note, "adb:"+old) || !strings.Contains(note, "no simpleperf") || counted != 32 {
		t.Errorf("phone without simpleperf: profile note %q, %d counted trials", note, counted)
	}
}
