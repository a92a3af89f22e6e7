package adb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/adb/apk"
	"github.com/perflab/perflab/lab/adb/probebin"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/simdevice"
)

func TestParseAmStart(t *testing.T) {
	for _, c := range []struct {
		out         string
		total, wait float64
		err         string
	}{
		{"Starting: Intent { cmp=a/.B }\nStatus: ok\nLaunchState: COLD\nActivity: a/.B\nTotalTime: 512\nWaitTime: 518\nComplete\n", 512, 518, ""},
		{"Starting: Intent { cmp=a/.B }\nStatus: ok\nActivity: a/.B\nThisTime: 300\nTotalTime: 301\nWaitTime: 320\nComplete\n", 301, 320, ""},
		{"Starting: Intent { cmp=a/.B }\nStatus: timeout\nActivity: a/.B\nComplete\n", 0, 0, "Status: timeout"},
		{"Starting: Intent { cmp=a/.B }\nError type 3\n", 0, 0, "no TotalTime"},
	} {
		total, wait, err := adb.ParseAmStart(c.out)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseAmStart(%q) err %v, want %q", c.out, err, c.err)
			}
			continue
		}
		if err != nil || total != c.total || wait != c.wait {
			t.Errorf("ParseAmStart(%q) = %v, %v, %v", c.out, total, wait, err)
		}
	}
}

func allControls() lab.Controls {
	return lab.Controls{
		Governor: json.RawMessage(`"recommended"`), RestoreSnapshot: true, KillApp: true, DismissDialogs: true,
		ClockReset: true, Proxy: "replay", Tmpfs: true, DropCaches: true,
	}
}

func experiment(trials int) *lab.Experiment {
	return &lab.Experiment{
		Device: "adb:x",
		Builds: map[string]lab.Build{
			lab.ArmControl:   {Name: "A", App: "feed"},
			lab.ArmTreatment: {Name: "B", App: "feed", EffectPct: 5},
		},
		Trials: trials, Warmup: 1, Order: "random", Seed: 7,
		Controls: allControls(),
		Metrics:  []string{"startup_ms", adb.MetricTotalTime},
	}
}

func drain(ch <-chan lab.Event, each func(lab.Event)) []lab.Event {
	var evs []lab.Event
	for e := range ch {
		evs = append(evs, e)
		if each != nil {
			each(e)
		}
	}
	return evs
}

func TestFullExperimentThroughRealADBServer(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 11})
	adbtest.Connect(t, srv, sim.Addr, "device")
	c := ctx(t)
	raw, dev := openSimPhone(t, c, sim.Addr, srv.Addr)
	info := dev.Info()
	for _, cp := range []string{lab.CapGovernor, lab.CapRestoreSnapshot, lab.CapTmpfs, lab.CapReverse, lab.CapProxy} {
		if !info.Has(cp) {
			t.Errorf("caps %v lack %s", info.Caps, cp)
		}
	}
	maxFreq := "/sys/devices/system/cpu/cpu4/cpufreq/scaling_max_freq"
	before, err := raw.ReadFile(c, maxFreq)
	if err != nil {
		t.Fatal(err)
	}

	evs := drain(lab.NewRunner(dev, experiment(12)).Run(c), nil)
	if err := dev.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	var profile *lab.Settings
	var ok, bytesSeen int
	var startup []float64
	for _, e := range evs {
		switch e.Type {
		case lab.EventSettings:
			if e.Settings.Profile != nil {
				profile = e.Settings
			}
		case lab.EventTrial:
			tr := e.Trial
			if tr.Status != lab.StatusOK {
				t.Errorf("trial %d %s: %s", tr.Index, tr.Status, tr.Reason)
				continue
			}
			ok++
			names := map[string]float64{}
			for _, m := range tr.Metrics {
				names[m.Name] = m.Value
			}
			if _, has := names["startup_ms"]; !has {
				t.Errorf("trial %d lacks the app's startup_ms (sent over adb reverse): %v", tr.Index, tr.Metrics)
			}
			if names[adb.MetricTotalTime] <= 0 {
				t.Errorf("trial %d: total_time_ms %v", tr.Index, names[adb.MetricTotalTime])
			}
			if len(tr.Metrics) != 2 {
				bytesSeen++
			}
			startup = append(startup, names["startup_ms"])
		case lab.EventEnd:
			if e.End.Reason != "completed" {
				t.Errorf("end %+v", e.End)
			}
		}
	}
	if ok != 26 || bytesSeen != 0 {
		t.Errorf("%d ok trials (want 26: 12 per arm + 1 warm-up each), %d with unrequested metrics", ok, bytesSeen)
	}
	if profile == nil {
		t.Fatal("no settings event with the applied governor profile")
	}
	if len(profile.Mismatches) > 0 {
		t.Errorf("governor read-back mismatches: %v", profile.Mismatches)
	}
	// The lock held on the device during the run ...
	if len(profile.Profile.Clusters) == 0 || profile.Profile.Clusters[len(profile.Profile.Clusters)-1].MaxKHz == 0 {
		t.Errorf("profile read back: %+v", profile.Profile)
	}
	// ... and the original settings are back after Close.
	after, err := raw.ReadFile(c, maxFreq)
	if err != nil || after != before {
		t.Errorf("scaling_max_freq after close %q (err %v), before %q", after, err, before)
	}
	// With every control on, the app state does not grow: the snapshot
	// restore keeps startup flat rather than creeping up.
	if n := len(startup); n > 8 {
		first, last := mean(startup[:4]), mean(startup[n-4:])
		if last > first*1.05 {
			t.Errorf("startup crept from %.1f to %.1f ms despite the reset procedure", first, last)
		}
	}
	out, err := srv.Run(c, sim.Addr, "mount | grep tmpfs; ls /data/local/tmp")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "tmpfs") || strings.Contains(out, "perflab-snapshot") {
		t.Errorf("close left state behind:\n%s", out)
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func TestSimdeviceRestartMidRun(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 5})
	adbtest.Connect(t, srv, sim.Addr, "device")
	// Its own deadline, not ctx's minute: a restart mid-run takes 20 s
	// alone and came near a minute on a loaded host.
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // only catches a hang
	defer cancel()
	raw, dev := openSimPhone(t, c, sim.Addr, srv.Addr)
	raw.ReconnectTimeout = 2 * time.Minute // the restart takes a second; a loaded host, more
	defer dev.Close()

	trials := 0
	restarted := make(chan *adbtest.Sim, 1)
	evs := drain(lab.NewRunner(dev, experiment(15)).Run(c), func(e lab.Event) {
		if e.Type != lab.EventTrial {
			return
		}
		trials++
		if trials == 6 {
			// Kill the phone mid-run and bring it back a moment later
			// on the same address, as a rebooted phone would return.
			sim.Stop()
			go func() {
				time.Sleep(time.Second)
				restarted <- adbtest.StartSim(t, sim.Addr, simdevice.Options{Preset: "pixel", Seed: 6})
			}()
		}
	})
	<-restarted
	var lost, notes int
	var end *lab.End
	var afterBack int
	back := false
	for _, e := range evs {
		switch e.Type {
		case lab.EventTrial:
			if e.Trial.Status != lab.StatusOK {
				if !strings.Contains(e.Trial.Reason, "device lost") {
					t.Errorf("failed trial %d: %s", e.Trial.Index, e.Trial.Reason)
				}
				lost++
			} else if back {
				afterBack++
			}
		case lab.EventNote:
			notes++
			if strings.Contains(e.Note.Text, "device back") {
				back = true
			}
			t.Logf("note: %s", e.Note.Text)
		case lab.EventEnd:
			end = e.End
		}
	}
	if lost != 1 {
		t.Errorf("%d trials failed as lost, want exactly the one in flight", lost)
	}
	if notes != 2 || !back {
		t.Errorf("notes %d (want paused + resumed), back %v", notes, back)
	}
	if end == nil || end.Reason != "completed" {
		t.Fatalf("end %+v, want completed", end)
	}
	if afterBack == 0 {
		t.Error("no trial ran after the device came back")
	}
}

func TestRunEndsWhenTheDeviceStaysAway(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 5})
	adbtest.Connect(t, srv, sim.Addr, "device")
	c := ctx(t)
	raw, dev := openSimPhone(t, c, sim.Addr, srv.Addr)
	raw.ReconnectTimeout = 2 * time.Second
	trials := 0
	evs := drain(lab.NewRunner(dev, experiment(10)).Run(c), func(e lab.Event) {
		if e.Type == lab.EventTrial {
			trials++
			if trials == 3 {
				sim.Stop()
			}
		}
	})
	last := evs[len(evs)-1]
	if last.Type != lab.EventEnd || last.End.Reason != "device-lost" || !strings.Contains(last.End.Error, "did not come back") {
		t.Fatalf("last event %+v, want end device-lost", last.End)
	}
	ok := 0
	for _, e := range evs {
		if e.Type == lab.EventTrial && e.Trial.Status == lab.StatusOK {
			ok++
		}
	}
	if ok != 3 {
		t.Errorf("%d ok trials kept, want the 3 before the loss", ok)
	}
	dev.Close()
}

func TestProbePushesTheRightBuildAndStreams(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	for _, preset := range []string{"pixel", "nexus5"} {
		t.Run(preset, func(t *testing.T) {
			sim := adbtest.StartSim(t, "", simdevice.Options{Preset: preset, Seed: 2})
			adbtest.Connect(t, srv, sim.Addr, "device")
			dev, err := adb.Open(ctx(t), sim.Addr, []string{srv.Addr})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			out := make(chan lab.ProbeSample, 100)
			if err := dev.Probe(ctx(t), lab.ProbeOptions{DurationS: 5, IntervalS: 0.5}, out); err != nil {
				t.Fatal(err)
			}
			close(out)
			n := 0
			for s := range out {
				n++
				if s.MFLOPS <= 0 || len(s.FreqKHz) == 0 {
					t.Errorf("sample %+v", s)
				}
			}
			if n != 10 {
				t.Errorf("%d samples, want 10", n)
			}
			// The device runs only a build for its ABI: the arm64 build on
			// the 32-bit nexus5 is refused as Android would.
			abi := map[string]string{"pixel": "arm64-v8a", "nexus5": "armeabi-v7a"}[preset]
			got, err := srv.Run(ctx(t), sim.Addr, "getprop ro.product.cpu.abi")
			if err != nil || strings.TrimSpace(got) != abi {
				t.Fatalf("abi %q %v", got, err)
			}
			if preset != "nexus5" {
				return
			}
			arm64, _ := probebin.ForABIs([]string{"arm64-v8a"})
			if err := srv.Push(ctx(t), sim.Addr, bytes.NewReader(arm64.Binary), "/data/local/tmp/p64", 0o755, time.Now()); err != nil {
				t.Fatal(err)
			}
			_, err = srv.Run(ctx(t), sim.Addr, "/data/local/tmp/p64 -duration 1s")
			var ee *adb.ExitError
			if !errors.As(err, &ee) || ee.Code != 126 || !strings.Contains(ee.Stderr, "not executable: 64-bit ELF file") {
				t.Errorf("arm64 probe on a 32-bit phone: %v, want exit 126", err)
			}
		})
	}
}

func TestTrialTimeout(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 5, Realtime: true})
	adbtest.Connect(t, srv, sim.Addr, "device")
	_, dev := openSimPhone(t, ctx(t), sim.Addr, srv.Addr)
	defer dev.Close()
	exp := experiment(1)
	exp.Warmup = 0
	exp.Controls = lab.Controls{KillApp: true}
	exp.TrialTimeout = 0.2 // a realtime launch takes ~0.5 s
	evs := drain(lab.NewRunner(dev, exp).Run(ctx(t)), nil)
	trials := 0
	for _, e := range evs {
		if e.Type != lab.EventTrial {
			continue
		}
		trials++
		if e.Trial.Status != lab.StatusTimeout || !strings.Contains(e.Trial.Reason, "trial_timeout") {
			t.Errorf("trial %d: %s %s, want timeout", e.Trial.Index, e.Trial.Status, e.Trial.Reason)
		}
	}
	// Every trial times out, so the run gives up after MaxConsecutiveFailures.
	if end := evs[len(evs)-1].End; trials < lab.MaxConsecutiveFailures || end == nil || end.Reason != "error" {
		t.Errorf("%d trials, end %+v; want at least %d timeouts, then an error end", trials, end, lab.MaxConsecutiveFailures)
	}
	// The device is still usable after a timed-out command.
	if _, err := srv.Run(ctx(t), sim.Addr, "true"); err != nil {
		t.Fatal(err)
	}
}

func TestAPKBuildsInstalledAndReadFromTheManifest(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 9})
	adbtest.Connect(t, srv, sim.Addr, "device")
	dir := t.TempDir()
	writeAPK := func(name, pkg string) string {
		p := filepath.Join(dir, name)
		var b bytes.Buffer
		if err := apk.WriteAPK(&b, pkg, ".MainActivity"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	_, dev := openSimPhone(t, ctx(t), sim.Addr, srv.Addr)
	defer dev.Close()
	exp := experiment(3)
	exp.Builds = map[string]lab.Build{
		lab.ArmControl:   {APK: writeAPK("a.apk", "org.perflab.sim.notes")},
		lab.ArmTreatment: {APK: writeAPK("b.apk", "org.perflab.sim.notes.p3")},
	}
	evs := drain(lab.NewRunner(dev, exp).Run(ctx(t)), nil)
	if end := evs[len(evs)-1].End; end == nil || end.Reason != "completed" || end.Counts[lab.StatusOK] != 8 {
		t.Fatalf("end %+v", end)
	}
	out, err := srv.Run(ctx(t), sim.Addr, "ls /data/local/tmp; pm path org.perflab.sim.notes.p3")
	if err != nil || !strings.Contains(out, "perflab-treatment.apk") || !strings.Contains(out, "package:/data/app/org.perflab.sim.notes.p3") {
		t.Errorf("after setup: %q %v", out, err)
	}

	// An APK of a real app cannot run on the simulated phone: setup says so.
	exp.Builds[lab.ArmTreatment] = lab.Build{APK: writeAPK("c.apk", "com.example.real")}
	_, err = dev.Setup(ctx(t), exp)
	if err == nil || !strings.Contains(err.Error(), "runs only simulated apps") {
		t.Errorf("real APK on the simdevice: %v", err)
	}
}

// openSimPhone opens a simulated phone through the adb backend with the
// extras it advertises (built-in profiles, sim apps, the proxy switch,
// simulated cool-downs), as perflab does through lab/devices. raw is the
// adb device itself.
func openSimPhone(tb testing.TB, c context.Context, serial, server string) (raw *adb.Device, dev lab.Device) {
	tb.Helper()
	raw, err := adb.Open(c, serial, []string{server})
	if err != nil {
		tb.Fatal(err)
	}
	dev, err = devices.WithSimExtras(c, raw)
	if err != nil {
		raw.Close()
		tb.Fatal(err)
	}
	return raw, dev
}

// TestCheckPushed: after a push, the file's size on the phone (sync LIST
// through gadb) is compared with the size sent.
func TestCheckPushed(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 1})
	adbtest.Connect(t, srv, sim.Addr, "device")
	dev, err := adb.Open(ctx(t), sim.Addr, []string{srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	const remote = adb.TmpDir + "/pushed.bin"
	if err := dev.Client().Push(ctx(t), sim.Addr, strings.NewReader("0123456789"), remote, 0o644, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := adb.CheckPushed(dev, ctx(t), remote, 10); err != nil {
		t.Errorf("intact push: %v", err)
	}
	if err := adb.CheckPushed(dev, ctx(t), remote, 11); err == nil || !strings.Contains(err.Error(), "10 bytes arrived of 11") {
		t.Errorf("short push: %v", err)
	}
	if err := adb.CheckPushed(dev, ctx(t), adb.TmpDir+"/never-pushed", 1); err == nil || !strings.Contains(err.Error(), "not on the phone") {
		t.Errorf("missing file: %v", err)
	}
}
