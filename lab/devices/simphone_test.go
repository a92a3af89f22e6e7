package devices

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/internal/checktest"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/sim"
	"github.com/perflab/perflab/lab/simdevice"
)

// TestSimExtrasOverADB opens two simulated phones through a real adb
// server: one advertising its extras, which lab/devices adds around the adb
// device, and one that does not, which stays a plain adb device, as every
// real phone does.
func TestSimExtrasOverADB(t *testing.T) {
	srv := adbtest.StartServer(t)
	withExtras := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 1})
	plain := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 2})
	plain.Shell.SetPropOverride(sim.PropExtras, "")
	adbtest.Connect(t, srv, withExtras.Addr, "device")
	adbtest.Connect(t, srv, plain.Addr, "device")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opt := Options{ADBServers: []string{srv.Addr}}

	d, err := Open(ctx, "adb:"+withExtras.Addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, ok := d.(*simPhone)
	if !ok {
		t.Fatalf("a phone advertising %s opens as %T, want the sim extras around it", sim.PropExtras, d)
	}
	info := p.Info()
	if info.Props[sim.PropExtras] != "advance,apps,host_binaries,profiles,proxy" || info.Props[sim.PropPreset] != "pixel" || info.Props[sim.PropSlowdown] != "1" {
		t.Errorf("props %v", info.Props)
	}
	if _, ok := p.BuiltinProfile("recommended"); !ok {
		t.Error("no built-in profile \"recommended\" for the pixel preset")
	}
	before := withExtras.Phone.Now()
	if err := p.Idle(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := withExtras.Phone.Now().Sub(before); got < time.Hour {
		t.Errorf("an hour's cool-down advanced the simulated clock by %v", got)
	}
	for _, iface := range []struct {
		name string
		ok   bool
	}{
		{"lab.Prober", is[lab.Prober](d)}, {"lab.Governor", is[lab.Governor](d)}, {"lab.Reconnector", is[lab.Reconnector](d)},
		{"lab.BuildChecker", is[lab.BuildChecker](d)}, {"lab.MetricChecker", is[lab.MetricChecker](d)},
		{"lab.ControlsChecker", is[lab.ControlsChecker](d)},
	} {
		if !iface.ok {
			t.Errorf("the wrapped phone lost %s", iface.name)
		}
	}

	r, err := Open(ctx, "adb:"+plain.Addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, ok := r.(*adb.Device); !ok {
		t.Errorf("a phone without %s opens as %T, want the plain adb device", sim.PropExtras, r)
	}
	if _, ok := r.Info().Props[sim.PropExtras]; ok {
		t.Errorf("plain phone's props name sim extras: %v", r.Info().Props)
	}

	// A sim app is a build on the phone with the simulated apps, as Setup
	// passes it on, and none on the plain phone.
	apps := &lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed", EffectPct: 5}}}
	if err := p.CheckBuilds(apps); err != nil {
		t.Errorf("sim apps on the phone with the sim extras: %v", err)
	}
	if err := r.(lab.BuildChecker).CheckBuilds(apps); err == nil || !strings.Contains(err.Error(), "builds.control.package: empty") {
		t.Errorf("sim apps on the plain phone: %v, want builds.control.package: empty", err)
	}

	// The phone with the simulated apps measures a fixed set of metrics,
	// and its CheckMetrics and Setup refuse any other with the same error;
	// the plain phone's app may report any.
	for _, tt := range []struct {
		name    string
		metrics []string
		want    string // "" for metrics the phone gives
	}{
		{"am start and the app's", []string{"total_time_ms", "startup_ms", "bytes_written", "wait_time_ms"}, ""},
		{"unknown", []string{"startup_ms", "cpu_ms"}, `metrics[1]: "cpu_ms" is not measured here (known: [total_time_ms wait_time_ms startup_ms bytes_written])`},
		{"typo", []string{"total_time"}, `metrics[0]: "total_time" is not measured here; did you mean "total_time_ms"?`},
	} {
		exp := &lab.Experiment{Builds: apps.Builds, Metrics: tt.metrics}
		cerr := p.CheckMetrics(exp)
		_, serr := p.Setup(ctx, exp)
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
		if err := r.(lab.MetricChecker).CheckMetrics(exp); err != nil {
			t.Errorf("%s on the plain phone: %v", tt.name, err)
		}
	}

	// The phone knows its preset's profiles, and its CheckControls and
	// Setup refuse any other with the same error; it has root (su), so
	// the controls that need it pass.
	for _, tt := range []struct {
		name     string
		controls lab.Controls
		want     string // "" for controls the phone applies
	}{
		{"preset's profile", lab.Controls{Governor: []byte(`"recommended"`), Tmpfs: true, DropCaches: true}, ""},
		{"unknown profile", lab.Controls{Governor: []byte(`"nosuch"`), Tmpfs: true}, `controls.governor: unknown profile "nosuch"`},
	} {
		exp := &lab.Experiment{Builds: apps.Builds, Controls: tt.controls}
		cerr := p.CheckControls(exp)
		if tt.want == "" {
			if cerr != nil {
				t.Errorf("%s: %v", tt.name, cerr)
			}
			continue // Setup would apply them
		}
		_, serr := p.Setup(ctx, exp)
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
	}
}

func is[T any](v any) bool {
	_, ok := v.(T)
	return ok
}
