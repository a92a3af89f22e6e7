package governor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// sysTree writes a sysfs-shaped tree of regular files under a temporary
// root: a two-cluster machine like a big.LITTLE phone.
func sysTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	put := func(p, v string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(CPURoot+"/present", "0-3")
	for cpu := 0; cpu < 4; cpu++ {
		d := CPURoot + "/cpu" + string(rune('0'+cpu)) + "/cpufreq/"
		rel, freqs := "0 1", "300000 600000 900000"
		if cpu >= 2 {
			rel, freqs = "2 3", "800000 1600000 2400000"
		}
		put(d+"related_cpus", rel)
		put(d+"scaling_available_frequencies", freqs)
		put(d+"scaling_available_governors", "schedutil performance powersave")
		put(d+"scaling_governor", "schedutil")
		f := strings.Fields(freqs)
		put(d+"scaling_min_freq", f[0])
		put(d+"scaling_max_freq", f[2])
		put(d+"scaling_cur_freq", f[1])
		if cpu > 0 {
			put(CPURoot+"/cpu"+string(rune('0'+cpu))+"/online", "1")
		}
	}
	put(ThermalCorePath, "1")
	return root
}

func TestDiscoverApplyReadOnSysfsTree(t *testing.T) {
	ctx := context.Background()
	f := OS{Root: sysTree(t)}
	l, err := Discover(ctx, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Clusters) != 2 || l.Clusters[1].MaxKHz() != 2400000 || !l.ThermalCore || l.GPU != "" || l.InputBoost {
		t.Fatalf("layout: %+v", l)
	}
	off := false
	p := lab.GovernorProfile{Name: "lock", ThermalCore: &off, Clusters: []lab.ClusterSetting{
		{CPUs: []int{0, 1}, Governor: "performance", MinKHz: 600000, MaxKHz: 600000},
		{CPUs: []int{2, 3}, Governor: "performance", MinKHz: 1600000, MaxKHz: 1600000},
	}}
	m, err := Apply(ctx, f, nil, l, p)
	if err != nil || len(m) != 0 {
		t.Fatalf("apply: %v %v", m, err)
	}
	got, err := Read(ctx, f, nil, l)
	if err != nil {
		t.Fatal(err)
	}
	if got.Clusters[1].MinKHz != 1600000 || got.Clusters[0].Governor != "performance" || *got.ThermalCore {
		t.Errorf("read back %+v", got)
	}
	// Bad profiles are refused before writing, naming what is wrong.
	for _, c := range []struct {
		p    lab.GovernorProfile
		want string
	}{
		{lab.GovernorProfile{Clusters: []lab.ClusterSetting{{CPUs: []int{0}, Governor: "interactive"}}}, `governor "interactive" not available`},
		{lab.GovernorProfile{Clusters: []lab.ClusterSetting{{CPUs: []int{2}, MaxKHz: 9000000}}}, "outside CPU 2's range"},
		{lab.GovernorProfile{Clusters: []lab.ClusterSetting{{CPUs: []int{0}, MinKHz: 900000, MaxKHz: 300000}}}, "above max_khz"},
		{lab.GovernorProfile{GPU: &lab.GPUSetting{Governor: "performance"}}, "no kgsl GPU"},
	} {
		if _, err := Apply(ctx, f, nil, l, c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error containing %q, got %v", c.want, err)
		}
	}
}

func TestLocalExplainsMissingCPUFreq(t *testing.T) {
	g := &Local{Files: OS{Root: t.TempDir()}}
	_, err := g.ReadProfile(context.Background())
	if err == nil || !errors.Is(err, ErrNoCPUFreq) || !strings.Contains(err.Error(), "cpufreq not present") {
		t.Errorf("got %v", err)
	}
	// On this host itself: either it works or it says plainly why not.
	if _, err := NewLocal().ReadProfile(context.Background()); err != nil && !strings.Contains(err.Error(), "cpufreq") {
		t.Errorf("live /sys: unclear error %v", err)
	}
}

func TestLocalWriteErrorsSayNeedsRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can write read-only files")
	}
	root := sysTree(t)
	p := filepath.Join(root, CPURoot, "cpu0/cpufreq/scaling_governor")
	os.Chmod(p, 0o444)
	err := OS{Root: root}.WriteFile(context.Background(), CPURoot+"/cpu0/cpufreq/scaling_governor", "performance")
	if err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("got %v", err)
	}
}

func TestLocalRestore(t *testing.T) {
	ctx := context.Background()
	g := &Local{Files: OS{Root: sysTree(t)}}
	before, _ := g.ReadProfile(ctx)
	p := lab.GovernorProfile{Clusters: []lab.ClusterSetting{{CPUs: []int{2, 3}, Governor: "powersave", MinKHz: 800000, MaxKHz: 800000}}}
	if _, err := g.ApplyProfile(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := g.ReadProfile(ctx)
	a, _ := json.Marshal(before)
	b, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Errorf("restore:\n%s\n%s", a, b)
	}
}

func TestResolveAndStore(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	builtin := func(name string) (lab.GovernorProfile, bool) {
		if name == "recommended" {
			return lab.GovernorProfile{Name: "builtin"}, true
		}
		return lab.GovernorProfile{}, false
	}
	for _, raw := range []string{``, `null`, `"stock"`, `""`} {
		if p, err := Resolve(json.RawMessage(raw), "Pixel 3", builtin); p != nil || err != nil {
			t.Errorf("Resolve(%s) = %v, %v; want nil", raw, p, err)
		}
	}
	p, err := Resolve(json.RawMessage(`"recommended"`), "Pixel 3", builtin)
	if err != nil || p.Name != "builtin" {
		t.Errorf("before tune: %v %v", p, err)
	}
	path, err := SaveTuned(Tuned{Model: "Pixel 3", Recommended: lab.GovernorProfile{Name: "tuned-x"}})
	if err != nil || filepath.Base(path) != "Pixel_3.json" {
		t.Fatalf("save: %s %v", path, err)
	}
	p, err = Resolve(json.RawMessage(`"recommended"`), "Pixel 3", builtin)
	if err != nil || p.Name != "tuned-x" {
		t.Errorf("after tune: %v %v", p, err)
	}
	p, err = Resolve(json.RawMessage(`{"name":"inline","clusters":[{"cpus":[0],"governor":"performance"}]}`), "x", nil)
	if err != nil || p.Name != "inline" || len(p.Clusters) != 1 {
		t.Errorf("inline: %v %v", p, err)
	}
	if _, err := Resolve(json.RawMessage(`{"nmae":"typo"}`), "x", nil); err == nil || !strings.Contains(err.Error(), "nmae") {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := Resolve(json.RawMessage(`"fastest"`), "x", nil); err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := Resolve(json.RawMessage(`"recommended"`), "Nexus 5", nil); err == nil || !strings.Contains(err.Error(), "perflab tune") {
		t.Errorf("no tuned profile: %v", err)
	}
}

func TestDescribe(t *testing.T) {
	off, zero := false, 0
	p := lab.GovernorProfile{ThermalCore: &off, InputBoost: &zero, Clusters: []lab.ClusterSetting{
		{CPUs: []int{0, 1, 2, 3}, Governor: "performance", MinKHz: 1728000, MaxKHz: 1728000}},
		GPU: &lab.GPUSetting{Governor: "performance", MinHz: 300000000, MaxHz: 300000000}}
	want := "cpu0-3 performance 1728 MHz · gpu performance 300 MHz · thermal core control off · input boost 0"
	if got := Describe(p); got != want {
		t.Errorf("Describe:\n got %s\nwant %s", got, want)
	}
}
