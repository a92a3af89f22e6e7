package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/engine"
)

// A build the device cannot run is refused before the session file is
// created: the error names the device and the field, no file is left in
// the session directory, and every device opened is closed. A pool checks
// every member.
func TestStartRefusesBuildsBeforeCreate(t *testing.T) {
	commands := map[string]lab.Build{
		lab.ArmControl:   {Command: []string{"true"}},
		lab.ArmTreatment: {Command: []string{"true"}},
	}
	apps := map[string]lab.Build{
		lab.ArmControl:   {App: "feed"},
		lab.ArmTreatment: {App: "feed", EffectPct: 5},
	}
	tests := []struct {
		name    string
		devices []string
		builds  map[string]lab.Build
		want    []string // substrings of the error, in order
		notWant string   // "" or a substring the error must not hold
	}{
		{"sim, command builds", []string{"sim:pixel"}, commands,
			[]string{"device sim:pixel cannot run the builds: builds.control.app: a sim build names a simulated app (feed, notes)"}, ""},
		{"sim, unknown app", []string{"sim:pixel"}, map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "nosuch"}},
			[]string{"device sim:pixel cannot run the builds: builds.treatment.app: "}, ""},
		{"sim, free startup", []string{"sim:pixel"}, map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed", EffectPct: -100}},
			[]string{"device sim:pixel cannot run the builds: builds.treatment.effect_pct: "}, ""},
		{"local, app builds", []string{"local"}, apps,
			[]string{"device local cannot run the builds: builds.control.command: empty"}, ""},
		{"local, no such dir", []string{"local"}, map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}, Dir: "/no/such/dir"}, lab.ArmTreatment: {Command: []string{"true"}}},
			[]string{"device local cannot run the builds: builds.control.dir: /no/such/dir is not a directory"}, ""},
		{"pool of sims, command builds", []string{"sim:pixel", "sim:pixel#2"}, commands,
			[]string{"device sim:pixel cannot run the builds: builds.control.app: ", "device sim:pixel#2 cannot run the builds: builds.control.app: "}, ""},
		{"pool of a sim and local, app builds", []string{"sim:pixel", "local"}, apps,
			[]string{"device local cannot run the builds: builds.control.command: empty"}, "sim:pixel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := lab.Experiment{Builds: tt.builds, Trials: 3, Warmup: 1, Order: lab.OrderAlternate, Seed: 3}
			if len(tt.devices) == 1 {
				exp.Device = tt.devices[0]
			} else {
				exp.Devices = tt.devices
			}
			opened := map[string]*closeCounter{}
			l := engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
				d, err := devices.Open(ctx, id, devices.Options{Seed: 3})
				if err != nil {
					return nil, err
				}
				c := &closeCounter{Device: d}
				opened[id] = c
				return c, nil
			}}
			dir := t.TempDir()
			s, err := engine.Start(context.Background(), l, engine.Plan{Experiment: exp, Tool: "test", Dir: dir})
			if err == nil {
				s.Cancel()
				for range s.Events {
				}
				t.Fatalf("started a session at %s", s.Path)
			}
			msg, rest := err.Error(), err.Error()
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q, want %q (in this order: %q)", msg, w, tt.want)
				}
				rest = rest[i+len(w):]
			}
			if tt.notWant != "" && strings.Contains(msg, tt.notWant) {
				t.Errorf("error %q names %s, which can run the builds", msg, tt.notWant)
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("session dir holds %s after the refusal", left[0].Name())
			}
			if len(opened) != len(tt.devices) {
				t.Errorf("opened %d devices, want %d", len(opened), len(tt.devices))
			}
			for id, c := range opened {
				if c.closed != 1 {
					t.Errorf("%s closed %d times, want once", id, c.closed)
				}
			}
		})
	}
}

// A sim run whose builds the phone can run is not refused: the check
// passes builds through, and the session file is created.
func TestStartAcceptsRunnableBuilds(t *testing.T) {
	for _, id := range []string{"sim:pixel", "local"} {
		t.Run(id, func(t *testing.T) {
			builds := map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed"}}
			if id == "local" {
				builds = map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}}, lab.ArmTreatment: {Command: []string{"true"}}}
			}
			exp := lab.Experiment{Device: id, Builds: builds, Trials: 2, Warmup: 0, Order: lab.OrderAlternate, Seed: 3}
			l := engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
				return devices.Open(ctx, id, devices.Options{Seed: 3})
			}}
			path := filepath.Join(t.TempDir(), "s.jsonl")
			s, err := engine.Start(context.Background(), l, engine.Plan{Experiment: exp, Tool: "test", Path: path})
			if err != nil {
				t.Fatal(err)
			}
			for range s.Events {
			}
			s.Wait()
			if _, err := os.Stat(path); err != nil {
				t.Errorf("no session file: %v", err)
			}
		})
	}
}

// closeCounter counts Close calls and keeps the device's build check.
type closeCounter struct {
	lab.Device
	closed int
}

func (c *closeCounter) CheckBuilds(exp *lab.Experiment) error {
	if bc, ok := c.Device.(lab.BuildChecker); ok {
		return bc.CheckBuilds(exp)
	}
	return nil
}

func (c *closeCounter) Close() error {
	c.closed++
	return c.Device.Close()
}
