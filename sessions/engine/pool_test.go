package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/profdiff"
)

// A pool of simulated phones runs as one session: the header lists every
// device, every trial names its own, the file reads back, and the fold
// pairs the interleaved rounds by device.
func TestStartPoolOfSimPhones(t *testing.T) {
	exp := &lab.Experiment{
		Devices: []string{"sim:pixel", "sim:pixel#2", "sim:pixel#3"},
		Builds: map[string]lab.Build{
			lab.ArmControl:   {App: "feed"},
			lab.ArmTreatment: {App: "feed", EffectPct: 5},
		},
		Trials: 30, Warmup: 1, Order: lab.OrderRandom, Seed: 3, Alpha: 0.05, Confidence: 0.95,
	}
	if err := exp.Validate(); err != nil {
		t.Fatal(err)
	}
	opt := devices.Options{Seed: exp.Seed}
	l := engine.Lab{
		Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
			return devices.Open(ctx, id, opt)
		},
		Resolve: func(ctx context.Context, specs []string) ([]string, error) { return devices.Resolve(ctx, specs, opt) },
	}
	path := filepath.Join(t.TempDir(), "pool.jsonl")
	s, err := engine.Start(context.Background(), l, engine.Plan{Experiment: *exp, Tool: "test", Path: path})
	if err != nil {
		t.Fatal(err)
	}
	fold := engine.NewFold(exp)
	for it := range s.Events {
		if it.Err != nil {
			t.Fatal(it.Err)
		}
		fold.Add(it.Event)
	}
	res := s.Wait()
	if err := engine.EndErr(res.End); err != nil {
		t.Fatal(err)
	}
	if p := fold.Progress(); p.Done != p.Total {
		t.Errorf("progress %d/%d at the end", p.Done, p.Total)
	}
	got, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Header.Devices) != 3 || got.Header.Plan.Devices[2] != "sim:pixel#3" {
		t.Fatalf("header devices %+v, plan %v", got.Header.Devices, got.Header.Plan.Devices)
	}
	byDev := map[string]int{}
	for _, tr := range got.Trials() {
		byDev[tr.Device]++
	}
	// The file holds each trial's start on its device, and the settings
	// once for the pool, not once per phone.
	starts, settings := map[string]int{}, 0
	for _, e := range got.Events {
		switch e.Type {
		case lab.EventStart:
			starts[e.Start.Device]++
		case lab.EventSettings:
			if e.Settings.Order != "" {
				settings++
			}
		}
	}
	for id, n := range byDev {
		if starts[id] != n {
			t.Errorf("%s: %d start events for %d trials", id, starts[id], n)
		}
	}
	if settings != 1 {
		t.Errorf("%d settings events with the order, want the pool's one", settings)
	}
	if len(byDev) != 3 || byDev[""] != 0 {
		t.Errorf("trials by device %v", byDev)
	}
	ins := fold.Inputs()
	if len(ins) == 0 || len(ins[0].Pairs) != 30 || len(ins[0].Strata) != 4 || len(ins[0].PairStrata) != 30 {
		t.Fatalf("inputs: %d pairs, strata %v", len(ins[0].Pairs), ins[0].Strata)
	}
	// Read from the file, the session gives the same pairs.
	again := sessions.MetricInputs(got.Events)
	if len(again[0].Pairs) != 30 || again[0].DroppedRounds != ins[0].DroppedRounds {
		t.Errorf("from the file: %d pairs, %d dropped", len(again[0].Pairs), again[0].DroppedRounds)
	}
}

func TestPoolRefusesFixedOrderAndProbe(t *testing.T) {
	exp := lab.Experiment{Devices: []string{"sim:pixel", "sim:pixel#2"}, Builds: map[string]lab.Build{
		lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed"}}, Trials: 2, Order: lab.OrderFixed, Alpha: 0.05, Confidence: 0.95}
	if err := exp.Validate(); err == nil {
		t.Error("fixed order on a pool validated")
	}
	l := engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
		return devices.Open(ctx, id, devices.Options{})
	}}
	if _, err := engine.Start(context.Background(), l, engine.Plan{Experiment: exp, Path: filepath.Join(t.TempDir(), "x.jsonl")}); err == nil {
		t.Error("fixed order on a pool started")
	}
	exp.Order = lab.OrderRandom
	if _, err := engine.Start(context.Background(), l, engine.Plan{Experiment: exp, ProbeS: 5, Path: filepath.Join(t.TempDir(), "x.jsonl")}); err == nil {
		t.Error("a probe on a pool started")
	}
}

// TestProfileEvery: "profile": {"every": 4} profiles one round in 4,
// both arms of it, on the simulated phone; the metrics' inputs (every
// view's verdicts) hold the unprofiled rounds only, a note says which
// were used, and perflab profile analyses the profiled ones. "profile":
// true still profiles every round.
func TestProfileEvery(t *testing.T) {
	for _, tc := range []struct {
		profile  string
		profiled int // rounds
	}{{`{"every": 4}`, 3}, {`true`, 12}} {
		exp, err := lab.ParseExperiment([]byte(`{"device": "sim:pixel", "trials": 12, "warmup": 1, "order": "random", "seed": 5,
			"builds": {"control": {"app": "feed"}, "treatment": {"app": "feed"}}, "metrics": ["startup_ms"], "profile": ` + tc.profile + `}`))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "s.jsonl")
		l := engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
			return devices.Open(ctx, id, devices.Options{Seed: exp.Seed})
		}}
		if _, err := engine.RunSession(context.Background(), l, engine.Plan{Experiment: *exp, Path: path, Tool: "test"}); err != nil {
			t.Fatal(err)
		}
		s, err := sessions.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		rounds := map[int]int{}
		for _, e := range s.Events {
			if tr := e.Trial; tr != nil && tr.Counted() && tr.Profile != nil {
				rounds[tr.Round]++
				if tr.ProfileRound != (exp.ProfileEvery > 1) {
					t.Errorf("trial %d: profile_round %v", tr.Index, tr.ProfileRound)
				}
			}
		}
		if len(rounds) != tc.profiled {
			t.Errorf("profile %s: %d rounds profiled (%v), want %d", tc.profile, len(rounds), rounds, tc.profiled)
		}
		for r, n := range rounds {
			if n != 2 || exp.ProfileEvery > 1 && r%exp.ProfileEvery != 0 {
				t.Errorf("round %d: %d trials profiled", r, n)
			}
		}
		in := sessions.MetricInputs(s.Events)
		if want := 12 - len(rounds)*btoi(exp.ProfileEvery > 1); len(in) != 1 || len(in[0].Samples[0]) != want || len(in[0].Samples[1]) != want {
			t.Errorf("profile %s: inputs %d/%d values, want %d", tc.profile, len(in[0].Samples[0]), len(in[0].Samples[1]), want)
		}
		notes := sessions.TrialNotes(s.Events)
		hasNote := slices.ContainsFunc(notes, func(n string) bool {
			return strings.Contains(n, "3 rounds of 12 profiled") && strings.Contains(n, "9 unprofiled rounds")
		})
		if hasNote != (exp.ProfileEvery > 1) {
			t.Errorf("profile %s: notes %q", tc.profile, notes)
		}
		r, err := profdiff.Analyze(path, profdiff.Options{})
		if err != nil || r.Pairs != len(rounds) {
			t.Errorf("profile %s: profdiff %v, %+v pairs", tc.profile, err, r)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
