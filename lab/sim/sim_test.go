package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
)

func TestSysfsFilesExist(t *testing.T) {
	for _, p := range Presets() {
		ph := NewPhone(p, 1)
		paths := []string{ThermalCorePath, InputBoostPath, KGSLPath + "/devfreq/governor", KGSLPath + "/devfreq/min_freq",
			KGSLPath + "/max_gpuclk", p.GPU.Dir + "/max_gpuclk", DropCachesPath, "/sys/class/thermal/thermal_zone0/temp"}
		for _, c := range p.Clusters {
			for _, cpu := range c.CPUs {
				for _, f := range []string{"scaling_governor", "scaling_available_governors", "scaling_available_frequencies",
					"scaling_min_freq", "scaling_max_freq", "scaling_cur_freq", "cpuinfo_max_freq"} {
					paths = append(paths, CPURoot+"/cpu"+itoa(cpu)+"/cpufreq/"+f)
				}
				if cpu != 0 {
					paths = append(paths, CPURoot+"/cpu"+itoa(cpu)+"/online")
				}
			}
		}
		for _, path := range paths {
			if b, err := ph.ReadFile(path); err != nil || len(b) == 0 {
				t.Errorf("%s: read %s: %q, %v", p.Name, path, b, err)
			}
		}
		if run, ok := ph.ServiceRunning("mpdecision"); !ok || !run {
			t.Errorf("%s: mpdecision not running at boot", p.Name)
		}
		ents, err := ph.ReadDir(CPURoot + "/cpu0/cpufreq")
		if err != nil || len(ents) < 10 {
			t.Errorf("%s: ReadDir cpufreq: %d entries, %v", p.Name, len(ents), err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestKernelWritesValidate(t *testing.T) {
	ph, _ := New("nexus5", 1)
	check := func(path, v string, want error) {
		t.Helper()
		err := ph.WriteFile(path, []byte(v))
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("write %q to %s: got %v, want %v", v, path, err, want)
		}
	}
	gov := CPURoot + "/cpu0/cpufreq/scaling_governor"
	check(gov, "performance", nil)
	check(gov, "schedutil", syscall.EINVAL) // not on this kernel
	check(CPURoot+"/cpu0/cpufreq/scaling_cur_freq", "300000", fs.ErrPermission)
	check(CPURoot+"/cpu0/cpufreq/scaling_min_freq", "abc", syscall.EINVAL)
	check("/sys/nonexistent", "1", fs.ErrNotExist)
	// kgsl snaps max_gpuclk down to a power level: MobileLab's 300 MHz reads back 200 MHz here.
	check(KGSLPath+"/max_gpuclk", "300000000", nil)
	if b, _ := ph.ReadFile(KGSLPath + "/max_gpuclk"); strings.TrimSpace(string(b)) != "200000000" {
		t.Errorf("max_gpuclk read back %q, want 200000000", b)
	}
}

func TestGovernorProfileApplyVerifyRestore(t *testing.T) {
	ctx := context.Background()
	for _, p := range Presets() {
		d, err := Open(p.Name, Options{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		stock, err := d.ReadProfile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rec := p.Recommended()
		m, err := d.ApplyProfile(ctx, rec)
		if err != nil || len(m) != 0 {
			t.Fatalf("%s: apply recommended: mismatches %v, err %v", p.Name, m, err)
		}
		got, _ := d.ReadProfile(ctx)
		for i, c := range got.Clusters {
			if c.Governor != "performance" || c.MinKHz != rec.Clusters[i].MinKHz || c.MaxKHz != rec.Clusters[i].MaxKHz {
				t.Errorf("%s: cluster %d read back %+v, want %+v", p.Name, i, c, rec.Clusters[i])
			}
		}
		if *got.MPDecision || *got.ThermalCore || *got.InputBoost != 0 {
			t.Errorf("%s: controls not off: %+v", p.Name, got)
		}
		// A GPU clock between power levels is reported as a mismatch.
		bad := rec
		bad.GPU = &lab.GPUSetting{Governor: "performance", MinHz: p.GPU.FreqsHz[0] + 1, MaxHz: p.GPU.FreqsHz[1] + 1}
		m, err = d.ApplyProfile(ctx, bad)
		if err != nil || len(m) != 1 || !strings.Contains(m[0], "max_gpuclk") {
			t.Errorf("%s: want one max_gpuclk mismatch, got %v (err %v)", p.Name, m, err)
		}
		// Profiles for CPUs the phone lacks are refused before anything is written.
		alien := lab.GovernorProfile{Name: "alien", Clusters: []lab.ClusterSetting{{CPUs: []int{42}, Governor: "performance"}}}
		if _, err := d.ApplyProfile(ctx, alien); err == nil || !strings.Contains(err.Error(), "CPU 42") {
			t.Errorf("%s: alien profile: %v", p.Name, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		back, _ := d.ReadProfile(ctx)
		if b, _ := json.Marshal(back); string(b) != mustJSON(stock) {
			t.Errorf("%s: Close did not restore stock:\n got %s\nwant %s", p.Name, b, mustJSON(stock))
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestKeepSkipsRestore(t *testing.T) {
	ctx := context.Background()
	d, _ := Open("pixel", Options{Seed: 1})
	rec := d.preset.Recommended()
	rec.Keep = true
	if _, err := d.ApplyProfile(ctx, rec); err != nil {
		t.Fatal(err)
	}
	d.Close()
	got, _ := d.ReadProfile(ctx)
	if got.Clusters[1].Governor != "performance" {
		t.Errorf("keep: governor restored to %q", got.Clusters[1].Governor)
	}
}

func TestFileSystemLikeAShell(t *testing.T) {
	ph, _ := New("pixel", 1)
	pkg := PackageName("feed", 0)
	if _, err := ph.Launch(pkg); err != nil {
		t.Fatal(err)
	}
	dir := DataDir(pkg)
	st, err := ph.Stat(dir + "/databases/feed.db")
	if err != nil || st.Size == 0 {
		t.Fatalf("database after launch: %+v %v", st, err)
	}
	if err := ph.Copy(dir, "/data/local/tmp/snap"); err != nil {
		t.Fatal(err)
	}
	ph.Launch(pkg)
	grown, _ := ph.Stat(dir + "/databases/feed.db")
	if grown.Size <= st.Size {
		t.Errorf("database did not grow: %d → %d", st.Size, grown.Size)
	}
	ph.RemoveAll(dir)
	if _, err := ph.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("rm -rf left %s: %v", dir, err)
	}
	ph.Copy("/data/local/tmp/snap", dir)
	restored, _ := ph.Stat(dir + "/databases/feed.db")
	if restored.Size != st.Size {
		t.Errorf("restore: size %d, want %d", restored.Size, st.Size)
	}
	if err := ph.MountTmpfs(dir); err != nil {
		t.Fatal(err)
	}
	if ents, _ := ph.ReadDir(dir); len(ents) != 0 {
		t.Errorf("fresh tmpfs not empty: %v", ents)
	}
	if err := ph.MountTmpfs(dir); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("double mount: %v", err)
	}
	if m := ph.Mounts(); len(m) != 1 || m[0].Target != dir {
		t.Errorf("mounts: %v", m)
	}
	ph.Unmount(dir)
	if _, err := ph.Stat(dir + "/databases/feed.db"); err != nil {
		t.Errorf("unmount should reveal the old contents: %v", err)
	}
	if err := ph.WriteFile("/data/local/tmp/x.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	ph.AppendFile("/data/local/tmp/x.txt", []byte("b"))
	if b, _ := ph.ReadFile("/data/local/tmp/x.txt"); string(b) != "ab" {
		t.Errorf("append: %q", b)
	}
}

func TestPackageNames(t *testing.T) {
	for _, c := range []struct {
		app string
		eff float64
		pkg string
	}{{"feed", 0, "org.perflab.sim.feed"}, {"feed", 1.5, "org.perflab.sim.feed.p1_5"}, {"notes", -2, "org.perflab.sim.notes.m2"}} {
		if got := PackageName(c.app, c.eff); got != c.pkg {
			t.Errorf("PackageName(%s, %v) = %s, want %s", c.app, c.eff, got, c.pkg)
		}
		app, eff, ok := ParsePackage(c.pkg)
		if !ok || app != c.app || eff != c.eff {
			t.Errorf("ParsePackage(%s) = %s %v %v", c.pkg, app, eff, ok)
		}
	}
	if _, _, ok := ParsePackage("com.android.chrome"); ok {
		t.Error("ParsePackage accepted a foreign package")
	}
	ph, _ := New("pixel", 1)
	if _, err := ph.Launch("com.android.chrome"); err == nil {
		t.Error("launching an unknown package should fail")
	}
}

func TestKnownEffect(t *testing.T) {
	// Same seed, same noise: a +5% build is exactly 5% slower launch for launch.
	run := func(eff float64) []float64 {
		ph, _ := New("pixel", 9)
		var out []float64
		for i := 0; i < 5; i++ {
			l, err := ph.Launch(PackageName("feed", eff))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, float64(l.Total)/float64(time.Millisecond))
		}
		return out
	}
	a, b := run(0), run(5)
	for i := range a {
		if r := b[i] / a[i]; r < 1.0499 || r > 1.0501 {
			t.Errorf("launch %d: ratio %.5f, want 1.05", i, r)
		}
	}
}

func TestSlowdown(t *testing.T) {
	// Same seed, same noise: a unit 7% slower than its model launches 7%
	// slower launch for launch, and its probe counts 1/1.07 the MFLOPS.
	run := func(f float64) (launch []float64, mflops float64) {
		d, err := Open("pixel", Options{Seed: 9, Slowdown: f})
		if err != nil {
			t.Fatal(err)
		}
		ph := d.Phone()
		for i := 0; i < 5; i++ {
			l, err := ph.Launch(PackageName("feed", 0))
			if err != nil {
				t.Fatal(err)
			}
			launch = append(launch, float64(l.Total)/float64(time.Millisecond))
		}
		return launch, ph.StartProbe().Next(time.Second).MFLOPS
	}
	a, pa := run(0)
	b, pb := run(1.07)
	for i := range a {
		if r := b[i] / a[i]; r < 1.0699 || r > 1.0701 {
			t.Errorf("launch %d: ratio %.5f, want 1.07", i, r)
		}
	}
	if r := pa / pb; r < 1.069 || r > 1.071 {
		t.Errorf("probe: %.1f vs %.1f MFLOPS, ratio %.4f, want 1.07", pa, pb, r)
	}
	for _, bad := range []float64{-1, math.Inf(1), math.NaN()} {
		if _, err := Open("pixel", Options{Slowdown: bad}); err == nil || !strings.Contains(err.Error(), "slowdown") {
			t.Errorf("Slowdown %v: err %v, want one naming the slowdown", bad, err)
		}
	}
}

func TestClockTTLPath(t *testing.T) {
	ph, _ := New("nexus5", 2)
	pkg := PackageName("feed", 0)
	first, _ := ph.Launch(pkg) // no cache yet: refresh
	fresh, _ := ph.Launch(pkg)
	ph.Advance(2 * time.Minute)
	stale, _ := ph.Launch(pkg)
	if first.Breakdown.CPU <= fresh.Breakdown.CPU*1.02 || stale.Breakdown.CPU <= fresh.Breakdown.CPU*1.02 {
		t.Errorf("refresh path not taken: first %.1f fresh %.1f stale %.1f ms CPU", first.Breakdown.CPU, fresh.Breakdown.CPU, stale.Breakdown.CPU)
	}
	start := ph.Now()
	ph.Advance(5 * time.Minute)
	ph.SetClock(start)
	if d := ph.Now().Sub(start); d < 0 || d > time.Second {
		t.Errorf("SetClock: now is %v after the set time", d)
	}
}

func TestReproducible(t *testing.T) {
	run := func() []float64 {
		var xs []float64
		d, _ := Open("pixel", Options{Seed: 5})
		xs = append(xs, aa(t, d, lab.Controls{}, 5, 10)...)
		return xs
	}
	a, b := run(), run()
	if mustJSON(a) != mustJSON(b) {
		t.Errorf("same seed, different results:\n%v\n%v", a, b)
	}
}

// aa runs an A/A experiment of n trials per arm in random order, driving
// the device as the runner does, and returns every startup time.
func aa(t *testing.T, d *Device, c lab.Controls, seed int64, n int) []float64 {
	t.Helper()
	ctx := context.Background()
	b := lab.Build{App: "feed"}
	exp := &lab.Experiment{Device: d.Info().ID, Builds: map[string]lab.Build{"control": b, "treatment": b},
		Trials: n, Order: "random", Seed: seed, Controls: c}
	if _, err := d.Setup(ctx, exp); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	var xs []float64
	for round := 0; round < n; round++ {
		arms := []string{lab.ArmControl, lab.ArmTreatment}
		r.Shuffle(2, func(i, j int) { arms[i], arms[j] = arms[j], arms[i] })
		for _, a := range arms {
			res := d.RunTrial(ctx, lab.TrialRequest{Round: round, Arm: a, BuildKey: a, Build: b, Controls: c, Metrics: []string{"startup_ms"}})
			if res.Status != lab.StatusOK || len(res.Metrics) != 1 {
				t.Fatalf("trial: %+v", res)
			}
			xs = append(xs, res.Metrics[0].Value)
		}
	}
	return xs
}

func variance(x []float64) float64 {
	var m float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	var s float64
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s / float64(len(x)-1)
}

// AllControlsOn is every phone control on: the preset's recommended
// governor lock, the full reset procedure, proxy replay, tmpfs.
var allOn = lab.Controls{Governor: json.RawMessage(`"recommended"`), RestoreSnapshot: true, KillApp: true,
	DismissDialogs: true, ClockReset: true, Proxy: "replay", Tmpfs: true, DropCaches: true}

// TestControlsStudy is MobileLab's result on the simulated phone: with every
// control on, an A/A experiment of 50 trials per arm has at least 7× less
// startup variance than with every control off, and switching any one
// control off raises it.
func TestControlsStudy(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // "recommended" = the built-in profile, not a tuned one
	singles := map[string]func(*lab.Controls){
		"governor":         func(c *lab.Controls) { c.Governor = nil },
		"restore_snapshot": func(c *lab.Controls) { c.RestoreSnapshot = false },
		"kill_app":         func(c *lab.Controls) { c.KillApp = false },
		"dismiss_dialogs":  func(c *lab.Controls) { c.DismissDialogs = false },
		"clock_reset":      func(c *lab.Controls) { c.ClockReset = false },
		"proxy":            func(c *lab.Controls) { c.Proxy = "off" },
		"tmpfs":            func(c *lab.Controls) { c.Tmpfs = false },
		"drop_caches":      func(c *lab.Controls) { c.DropCaches = false },
	}
	for _, p := range Presets() {
		for _, seed := range []int64{11, 12} {
			study := func(c lab.Controls) float64 {
				d, err := Open(p.Name, Options{})
				if err != nil {
					t.Fatal(err)
				}
				return variance(aa(t, d, c, seed, 50))
			}
			on, off := study(allOn), study(lab.Controls{})
			t.Logf("%s seed %d: variance all on %.1f ms², all off %.1f ms² (%.1f×)", p.Name, seed, on, off, off/on)
			if off < 7*on {
				t.Errorf("%s seed %d: all off %.1f vs all on %.1f: only %.1f× (want ≥ 7×)", p.Name, seed, off, on, off/on)
			}
			for name, drop := range singles {
				c := allOn
				drop(&c)
				v := study(c)
				t.Logf("  %-16s off: %.1f ms² (%.1f×)", name, v, v/on)
				if v < 1.3*on {
					t.Errorf("%s seed %d: switching %s off gives variance %.1f, not clearly above all-on %.1f", p.Name, seed, name, v, on)
				}
			}
		}
	}
}

func TestProbeStockThrottlesRecommendedHolds(t *testing.T) {
	for _, p := range Presets() {
		// Stock: the governor runs at the top, heats past the trip point and is capped.
		d, _ := Open(p.Name, Options{Seed: 1})
		pr := d.Phone().StartProbe()
		first := pr.Next(time.Second)
		var last lab.ProbeSample
		maxT := 0.0
		for i := 0; i < 600; i++ {
			last = pr.Next(time.Second)
			if last.TempC > maxT {
				maxT = last.TempC
			}
		}
		if last.MFLOPS > 0.9*first.MFLOPS || maxT < p.Thermal.TripC-0.5 {
			t.Errorf("%s stock: MFLOPS %.0f → %.0f, max temp %.1f (trip %.0f): expected throttling",
				p.Name, first.MFLOPS, last.MFLOPS, maxT, p.Thermal.TripC)
		}
		// Recommended: locked below the trip point, flat.
		d, _ = Open(p.Name, Options{Seed: 1})
		if _, err := d.ApplyProfile(context.Background(), p.Recommended()); err != nil {
			t.Fatal(err)
		}
		pr = d.Phone().StartProbe()
		lo, hi := 1e18, 0.0
		for i := 0; i < 600; i++ {
			s := pr.Next(time.Second)
			for c, f := range s.FreqKHz {
				if f != p.Recommended().Clusters[c].MaxKHz {
					t.Fatalf("%s recommended: cluster %d at %d kHz at t=%.0f", p.Name, c, f, s.T)
				}
			}
			if s.MFLOPS < lo {
				lo = s.MFLOPS
			}
			if s.MFLOPS > hi {
				hi = s.MFLOPS
			}
		}
		if hi > 1.06*lo {
			t.Errorf("%s recommended: MFLOPS range %.0f–%.0f", p.Name, lo, hi)
		}
		if st := p.SteadyTempC(p.Sustainable(3), p.LockGPUHz()); st >= p.Thermal.TripC {
			t.Errorf("%s: recommended steady temp %.1f ≥ trip %.1f", p.Name, st, p.Thermal.TripC)
		}
	}
}

func TestRunProbeStreamsSimulatedTime(t *testing.T) {
	d, _ := Open("pixel", Options{Seed: 1})
	out := make(chan lab.ProbeSample, 1000)
	start := time.Now()
	if err := d.Probe(context.Background(), lab.ProbeOptions{DurationS: 600, IntervalS: 1}, out); err != nil {
		t.Fatal(err)
	}
	close(out)
	n := 0
	var last lab.ProbeSample
	for s := range out {
		n++
		last = s
	}
	if n != 600 || last.T < 599.9 || last.T > 600.1 {
		t.Errorf("got %d samples ending at t=%.2f, want 600 ending at 600", n, last.T)
	}
	t.Logf("10 simulated minutes of probe in %v", time.Since(start))
}

func TestSetupErrorsNameTheField(t *testing.T) {
	d, _ := Open("pixel", Options{})
	_, err := d.Setup(context.Background(), &lab.Experiment{Builds: map[string]lab.Build{"control": {App: "feed"}, "treatment": {App: "nope"}}})
	if err == nil || !strings.Contains(err.Error(), "builds.treatment.app") {
		t.Errorf("unknown app: %v", err)
	}
	_, err = d.Setup(context.Background(), &lab.Experiment{Builds: map[string]lab.Build{"control": {App: "feed"}},
		Controls: lab.Controls{Governor: json.RawMessage(`"bogus"`)}})
	if err == nil || !strings.Contains(err.Error(), "governor") {
		t.Errorf("unknown governor profile: %v", err)
	}
}

func TestControlsSwitchMidRun(t *testing.T) {
	ctx := context.Background()
	d, _ := Open("pixel", Options{Seed: 4})
	b := lab.Build{App: "notes", EffectPct: 2}
	inline := json.RawMessage(`{"name":"mine","clusters":[{"cpus":[4,5,6,7],"governor":"performance","min_khz":1459200,"max_khz":1459200}],"mpdecision":false}`)
	exp := &lab.Experiment{Builds: map[string]lab.Build{"control": {App: "notes"}, "treatment": b}, Seed: 4,
		Controls: lab.Controls{Governor: inline}}
	ev, err := d.Setup(ctx, exp)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) == 0 || ev[0].Settings == nil || ev[0].Settings.Profile == nil || len(ev[0].Settings.Mismatches) != 0 {
		t.Fatalf("setup events: %+v", ev)
	}
	if got := d.Phone().CurrentKHz(); got[1] > 1459200 {
		t.Errorf("big cluster at %d kHz under a 1459200 lock", got[1])
	}
	pkg := PackageName("notes", 2)
	c := exp.Controls
	c.Tmpfs, c.Proxy = true, "replay"
	if r := d.RunTrial(ctx, lab.TrialRequest{Build: b, BuildKey: "treatment", Controls: c}); r.Status != lab.StatusOK {
		t.Fatal(r.Reason)
	}
	if m := d.Phone().Mounts(); len(m) != 2 || d.Phone().Proxy() != "replay" {
		t.Errorf("tmpfs/proxy not switched on: mounts %v proxy %s", m, d.Phone().Proxy())
	}
	if _, err := d.Phone().Stat(DataDir(pkg) + "/databases/notes.db"); err != nil {
		t.Errorf("tmpfs should start from the snapshot: %v", err)
	}
	c.Governor, c.Tmpfs, c.Proxy = json.RawMessage(`"stock"`), false, "off"
	if r := d.RunTrial(ctx, lab.TrialRequest{Build: b, BuildKey: "treatment", Controls: c}); r.Status != lab.StatusOK {
		t.Fatal(r.Reason)
	}
	prof, _ := d.ReadProfile(ctx)
	if prof.Clusters[1].Governor != "schedutil" || len(d.Phone().Mounts()) != 0 || d.Phone().Proxy() != "off" {
		t.Errorf("switching off did not restore: %+v mounts %v", prof.Clusters[1], d.Phone().Mounts())
	}
	if r := d.RunTrial(ctx, lab.TrialRequest{Build: lab.Build{}, BuildKey: "x"}); r.Status != lab.StatusFailed || r.Reason == "" {
		t.Errorf("a build without an app must fail with a reason: %+v", r)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if r := d.RunTrial(cctx, lab.TrialRequest{Build: b}); r.Status != lab.StatusFailed {
		t.Errorf("cancelled trial: %+v", r)
	}
}
