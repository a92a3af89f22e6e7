package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
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
