package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions/engine"
)

// A build the device cannot run, or a metric it cannot give, is refused
// before the session file is created: the error names the device and the
// field, no file is left in the session directory, and every device opened
// is closed. A pool checks every member.
func TestStartRefusesBeforeCreate(t *testing.T) {
	commands, apps := testBuilds()
	tests := []struct {
		name    string
		devices []string
		builds  map[string]lab.Build
		metrics []string
		want    []string // substrings of the error, in order
		notWant string   // "" or a substring the error must not hold
	}{
		{"sim, command builds", []string{"sim:pixel"}, commands, nil,
			[]string{"device sim:pixel cannot run the builds: builds.control.app: a sim build names a simulated app (feed, notes)"}, ""},
		{"sim, unknown app", []string{"sim:pixel"}, map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "nosuch"}}, nil,
			[]string{"device sim:pixel cannot run the builds: builds.treatment.app: "}, ""},
		{"sim, free startup", []string{"sim:pixel"}, map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed", EffectPct: -100}}, nil,
			[]string{"device sim:pixel cannot run the builds: builds.treatment.effect_pct: "}, ""},
		{"local, app builds", []string{"local"}, apps, nil,
			[]string{"device local cannot run the builds: builds.control.command: empty"}, ""},
		{"local, no such dir", []string{"local"}, map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}, Dir: "/no/such/dir"}, lab.ArmTreatment: {Command: []string{"true"}}}, nil,
			[]string{"device local cannot run the builds: builds.control.dir: /no/such/dir is not a directory"}, ""},
		{"pool of sims, command builds", []string{"sim:pixel", "sim:pixel#2"}, commands, nil,
			[]string{"device sim:pixel cannot run the builds: builds.control.app: ", "device sim:pixel#2 cannot run the builds: builds.control.app: "}, ""},
		{"pool of a sim and local, app builds", []string{"sim:pixel", "local"}, apps, nil,
			[]string{"device local cannot run the builds: builds.control.command: empty"}, "sim:pixel"},
		{"sim, unknown metric", []string{"sim:pixel"}, apps, []string{"startup_ms", "cpu_ms"},
			[]string{`device sim:pixel cannot measure the metrics: metrics[1]: "cpu_ms" is not measured here (known: [startup_ms bytes_written])`}, "cannot run the builds"},
		{"sim, metric typo", []string{"sim:pixel"}, apps, []string{"startup"},
			[]string{`device sim:pixel cannot measure the metrics: metrics[0]: "startup" is not measured here; did you mean "startup_ms"? (known: [startup_ms bytes_written])`}, ""},
		{"sim, builds and metric", []string{"sim:pixel"}, commands, []string{"cpu_ms"},
			[]string{"device sim:pixel cannot run the builds: builds.control.app: ", `device sim:pixel cannot measure the metrics: metrics[0]: "cpu_ms"`}, ""},
		{"local, metric typo", []string{"local"}, commands, []string{"usr_ms"},
			[]string{`device local cannot measure the metrics: metrics[0]: "usr_ms" is not measured here; did you mean "user_ms"?`}, ""},
		{"local, wall_ms under cachegrind", []string{"local"}, commands, []string{"wall_ms", "cachegrind"},
			[]string{"device local cannot measure the metrics: metrics: wall_ms cannot be measured in the same trial as cachegrind"}, ""},
		{"pool of sims, unknown metric", []string{"sim:pixel", "sim:pixel#2"}, apps, []string{"cpu_ms"},
			[]string{`device sim:pixel cannot measure the metrics: metrics[0]: "cpu_ms"`, `device sim:pixel#2 cannot measure the metrics: metrics[0]: "cpu_ms"`}, ""},
		{"pool of a sim and local, wall_ms", []string{"sim:pixel", "local"}, apps, []string{"wall_ms"},
			[]string{`device sim:pixel cannot measure the metrics: metrics[0]: "wall_ms"`, "device local cannot run the builds: "}, "local cannot measure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := lab.Experiment{Builds: tt.builds, Metrics: tt.metrics, Trials: 3, Warmup: 1, Order: lab.OrderAlternate, Seed: 3}
			checkRefused(t, tt.devices, exp, tt.want, tt.notWant)
		})
	}
}

// Controls a device cannot apply, as far as it can tell without touching
// it, are refused at the same point, naming the device and the field: no
// file is left in the session directory and every device opened is closed.
// A pool names each device that cannot; one that ignores a control (a
// simulated phone has no CPU to pin) is not named.
func TestStartRefusesControlsBeforeCreate(t *testing.T) {
	commands, apps := testBuilds()
	pin := lab.MaxCPU // no host has it; without taskset pin_cpu is refused too
	tests := []struct {
		name     string
		devices  []string
		builds   map[string]lab.Build
		controls lab.Controls
		want     []string // substrings of the error, in order
		notWant  string   // "" or a substring the error must not hold
	}{
		{"local, pin_cpu", []string{"local"}, commands, lab.Controls{PinCPU: &pin},
			[]string{"device local cannot apply the controls: controls.pin_cpu: "}, ""},
		{"local, tmpfs", []string{"local"}, commands, lab.Controls{Tmpfs: true, KillApp: true},
			[]string{"device local cannot apply the controls: controls.kill_app: the local device cannot do this"}, ""},
		{"local, no state_dir", []string{"local"}, commands, lab.Controls{StateDir: "/no/such/dir"},
			[]string{"device local cannot apply the controls: controls.state_dir: "}, ""},
		{"local, unknown governor", []string{"local"}, commands, lab.Controls{Governor: []byte(`"nosuch"`)},
			[]string{`device local cannot apply the controls: controls.governor: unknown profile "nosuch"`}, ""},
		{"sim, unknown governor", []string{"sim:pixel"}, apps, lab.Controls{Governor: []byte(`"nosuch"`)},
			[]string{`device sim:pixel cannot apply the controls: controls.governor: unknown profile "nosuch"`}, ""},
		{"sim, builds and governor", []string{"sim:pixel"}, commands, lab.Controls{Governor: []byte(`"nosuch"`)},
			[]string{"device sim:pixel cannot run the builds: ", "device sim:pixel cannot apply the controls: controls.governor: "}, ""},
		{"pool of sims, unknown governor", []string{"sim:pixel", "sim:pixel#2"}, apps, lab.Controls{Governor: []byte(`"nosuch"`)},
			[]string{"device sim:pixel cannot apply the controls: controls.governor: ", "device sim:pixel#2 cannot apply the controls: controls.governor: "}, ""},
		{"pool of a sim and local, tmpfs and pin_cpu", []string{"sim:pixel", "local"}, apps, lab.Controls{Tmpfs: true, PinCPU: &pin},
			[]string{"device local cannot run the builds: ", "device local cannot apply the controls: controls.pin_cpu: "}, "sim:pixel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := lab.Experiment{Builds: tt.builds, Controls: tt.controls, Trials: 3, Warmup: 1, Order: lab.OrderAlternate, Seed: 3}
			checkRefused(t, tt.devices, exp, tt.want, tt.notWant)
		})
	}
}

// checkRefused starts exp on the devices ids and reports, as errors of t,
// unless Start fails with an error holding want in order and not notWant,
// with no file in the session directory and every device opened closed
// once.
func checkRefused(t *testing.T, ids []string, exp lab.Experiment, want []string, notWant string) {
	t.Helper()
	if len(ids) == 1 {
		exp.Device = ids[0]
	} else {
		exp.Devices = ids
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
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("error %q, want %q (in this order: %q)", msg, w, want)
		}
		rest = rest[i+len(w):]
	}
	if notWant != "" && strings.Contains(msg, notWant) {
		t.Errorf("error %q names %s, which it must not", msg, notWant)
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("session dir holds %s after the refusal", left[0].Name())
	}
	if len(opened) != len(ids) {
		t.Errorf("opened %d devices, want %d", len(opened), len(ids))
	}
	for id, c := range opened {
		if c.closed != 1 {
			t.Errorf("%s closed %d times, want once", id, c.closed)
		}
	}
}

// A run whose builds the device can run, whose metrics it gives and whose
// controls it applies is not refused: the checks pass them through, and
// the session file is created.
func TestStartAcceptsRunnableBuilds(t *testing.T) {
	for _, id := range []string{"sim:pixel", "local"} {
		t.Run(id, func(t *testing.T) {
			builds := map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed"}}
			metrics := []string{"bytes_written"}
			pin := 0 // ignored by a simulated phone
			controls := lab.Controls{Governor: []byte(`"stock"`), Tmpfs: true, KillApp: true, PinCPU: &pin}
			if id == "local" {
				builds = map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}}, lab.ArmTreatment: {Command: []string{"true"}}}
				metrics = []string{"wall_ms"}
				controls = lab.Controls{Governor: []byte(`"stock"`), StateDir: t.TempDir(), Prepare: []string{"true"}}
			}
			exp := lab.Experiment{Device: id, Builds: builds, Metrics: metrics, Controls: controls, Trials: 2, Warmup: 0, Order: lab.OrderAlternate, Seed: 3}
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

// testBuilds are two builds of true, which the local host runs, and two of
// the feed app, which a simulated phone runs.
func testBuilds() (commands, apps map[string]lab.Build) {
	commands = map[string]lab.Build{
		lab.ArmControl:   {Command: []string{"true"}},
		lab.ArmTreatment: {Command: []string{"true"}},
	}
	apps = map[string]lab.Build{
		lab.ArmControl:   {App: "feed"},
		lab.ArmTreatment: {App: "feed", EffectPct: 5},
	}
	return commands, apps
}

// closeCounter counts Close calls and keeps the device's build, metric
// and controls checks.
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

func (c *closeCounter) CheckMetrics(exp *lab.Experiment) error {
	if mc, ok := c.Device.(lab.MetricChecker); ok {
		return mc.CheckMetrics(exp)
	}
	return nil
}

func (c *closeCounter) CheckControls(exp *lab.Experiment) error {
	if cc, ok := c.Device.(lab.ControlsChecker); ok {
		return cc.CheckControls(exp)
	}
	return nil
}

func (c *closeCounter) Close() error {
	c.closed++
	return c.Device.Close()
}
