package sim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestCallTreeShape: a few hundred functions, the same for every call,
// whose CPU shares add up to 1, hottest first.
func TestCallTreeShape(t *testing.T) {
	a, b := NewCallTree("feed"), NewCallTree("feed")
	fs := a.Functions()
	if len(fs) < 150 || len(fs) > 400 || fs[0] != "feed.decodeImage" {
		t.Fatalf("%d functions, hottest %q", len(fs), fs[0])
	}
	if len(b.nodes) != len(a.nodes) || b.nodes[100].name != a.nodes[100].name {
		t.Error("the tree differs between calls")
	}
	sum := 0.0
	for _, n := range a.nodes {
		if n.comp == compCPU {
			sum += n.share
		}
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("CPU shares add up to %v", sum)
	}
	if err := a.CheckFunction("feed.nope"); err == nil {
		t.Error("an unknown function was accepted")
	}
}

// TestFunctionEffectPackage: a build's function effect survives the
// package name, and a launch of it spends the known extra time in that
// function; a build without one launches exactly as before.
func TestFunctionEffectPackage(t *testing.T) {
	b := lab.Build{App: "feed", EffectPct: 1.5, Effect: &lab.FunctionEffect{Function: "feed.json.parse", Pct: -3}}
	pkg := BuildPackage(b)
	app, eff, fn, fnPct, ok := parsePackage(pkg)
	tree := NewCallTree("feed")
	want, _ := tree.Index("feed.json.parse")
	if !ok || app != "feed" || eff != 1.5 || fn != want || fnPct != -3 {
		t.Fatalf("%s → %s %v %d %v %v", pkg, app, eff, fn, fnPct, ok)
	}
	launch := func(pkg string) Launch {
		ph, err := New("pixel", 5)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ph.Launch(pkg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	plain := launch(BuildPackage(lab.Build{App: "feed"}))
	slow := launch(BuildPackage(lab.Build{App: "feed", Effect: &lab.FunctionEffect{Function: "feed.decodeImage", Pct: 10}}))
	extra := 0.22 * plain.Breakdown.CPU * 0.10
	if plain.Breakdown.FnExtra != 0 || math.Abs(slow.Breakdown.FnExtra-extra) > 1e-9 || slow.Total <= plain.Total {
		t.Errorf("extra %v (want %v), totals %v → %v", slow.Breakdown.FnExtra, extra, plain.Total, slow.Total)
	}
}

// TestSimProfile: the samples add up to the launch's time within the
// Poisson noise, carry the function's stack leaf first, and the phases
// label them by time.
func TestSimProfile(t *testing.T) {
	ph, _ := New("pixel", 9)
	l, err := ph.Launch(PackageName("feed", 0))
	if err != nil {
		t.Fatal(err)
	}
	tree := NewCallTree("feed")
	total := float64(l.Total) / 1e6
	p := tree.Profile(l.Breakdown, total, -1, 0, rand.New(rand.NewPCG(1, 2)))
	got := float64(p.TotalNs()) / 1e6
	if math.Abs(got-total) > 4*math.Sqrt(total*1e6/SamplePeriodNs)*SamplePeriodNs/1e6 {
		t.Errorf("samples add up to %.1f ms, the launch took %.1f ms", got, total)
	}
	p.Label()
	phases := map[string]int{}
	for _, s := range p.Samples {
		phases[s.Phase]++
		if s.Stack[len(s.Stack)-1] != "android.app.ActivityThread.main" {
			t.Fatalf("stack %v does not end at the root", s.Stack)
		}
	}
	if phases[PhaseStartup] == 0 || phases[PhaseNetwork] == 0 || phases[PhaseFirstFrame] == 0 || phases[""] != 0 {
		t.Errorf("samples per phase %v", phases)
	}
}

// TestSimProfileBinaries: every frame of a launch's profile has its
// simulated binary's mapping and its address in it, the ones the
// simulated phone's simpleperf reports, every mapping symbolized.
func TestSimProfileBinaries(t *testing.T) {
	ph, _ := New("pixel", 9)
	pkg := PackageName("feed", 0)
	l, err := ph.Launch(pkg)
	if err != nil {
		t.Fatal(err)
	}
	p := LaunchProfile(pkg, l, rand.New(rand.NewPCG(1, 2)))
	if len(p.Mappings) < 2 {
		t.Fatalf("mappings %+v", p.Mappings)
	}
	for _, s := range p.Samples {
		if len(s.Frames) != len(s.Stack) {
			t.Fatalf("%d frames for %d functions", len(s.Frames), len(s.Stack))
		}
		for i, f := range s.Frames {
			m := p.Mappings[f.Mapping-1]
			if f.Addr != FuncAddr(s.Stack[i]) || m.File != FuncBinary(s.Stack[i], pkg) || !m.Symbolized || f.Addr >= m.Limit {
				t.Fatalf("%s: frame %+v in %+v", s.Stack[i], f, m)
			}
		}
	}
}
