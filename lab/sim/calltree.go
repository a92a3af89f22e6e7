package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/perflab/perflab/lab"
)

// The simulated apps' call trees: a few hundred functions per app with the
// skew of real startup profiles (a few hot functions, a long tail), in
// three phases, whose time follows the launch's own breakdown (Breakdown),
// so that a profile of a sim trial has a known truth: a build can slow one
// function by a known percentage (lab.FunctionEffect) and the per-function
// analysis must find it.

// Phases of a simulated launch, in order.
const (
	PhaseStartup    = "startup"     // process start, DI, database open, class loading
	PhaseNetwork    = "network"     // the feed's requests
	PhaseFirstFrame = "first_frame" // parsing, decoding, layout and drawing
)

// Components of a launch's time a function can stand for (Breakdown's).
const (
	compCPU     = "cpu"
	compRead    = "read"
	compWrite   = "write"
	compNetwork = "network"
	compState   = "state"
	compLinger  = "linger"
)

// fnNode is one function of a call tree: its name, its caller, its phase,
// and the share of its component's time spent in it (self).
type fnNode struct {
	name   string
	parent int // index of the caller; -1 for the root
	phase  string
	comp   string
	share  float64 // of its component's time; the shares of a component sum to 1
}

// CallTree is a simulated app's functions.
type CallTree struct {
	app    string
	nodes  []fnNode
	byName map[string]int
}

// SamplePeriodNs is the simulated profiler's sampling period: 20 kHz of
// simulated CPU time (simpleperf's default is 4 kHz; the sim costs nothing
// to sample, and the per-function statistics need the counts).
const SamplePeriodNs = 50_000

// hot are the hot CPU functions of an app (per app prefix), with their
// share of its CPU time, in the phase they run in.
var hot = []struct {
	name, module, phase string
	share               float64
}{
	{"decodeImage", "image", PhaseFirstFrame, 0.22},
	{"json.parse", "model", PhaseFirstFrame, 0.14},
	{"layout.measure", "ui", PhaseFirstFrame, 0.09},
	{"render.draw", "ui", PhaseFirstFrame, 0.07},
	{"dex.loadClasses", "init", PhaseStartup, 0.06},
	{"di.inject", "init", PhaseStartup, 0.04},
}

// tailModules are where the long tail of small functions lives.
var tailModules = []struct{ module, phase string }{
	{"init", PhaseStartup}, {"config", PhaseStartup}, {"db", PhaseStartup},
	{"model", PhaseFirstFrame}, {"ui", PhaseFirstFrame}, {"image", PhaseFirstFrame}, {"util", PhaseFirstFrame},
}

// tailFunctions is the number of small functions of the tail.
const tailFunctions = 190

// NewCallTree builds app's call tree, the same for every phone and run:
// its shape is seeded by the app's name only.
func NewCallTree(app string) *CallTree {
	h := fnv.New64a()
	h.Write([]byte("calltree:" + app))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x63616c6c))
	t := &CallTree{app: app, byName: map[string]int{}}
	add := func(name string, parent int, phase, comp string, share float64) int {
		t.nodes = append(t.nodes, fnNode{name: name, parent: parent, phase: phase, comp: comp, share: share})
		t.byName[name] = len(t.nodes) - 1
		return len(t.nodes) - 1
	}
	root := add("android.app.ActivityThread.main", -1, "", "", 0)
	entries := map[string]int{
		PhaseStartup:    add(app+".App.onCreate", root, PhaseStartup, "", 0),
		PhaseNetwork:    add(app+".net.fetchFeed", root, PhaseNetwork, "", 0),
		PhaseFirstFrame: add(app+".MainActivity.onCreate", root, PhaseFirstFrame, "", 0),
	}
	modules := map[string]int{}
	module := func(m, phase string) int {
		key := m + "/" + phase
		if i, ok := modules[key]; ok {
			return i
		}
		i := add(fmt.Sprintf("%s.%s.run", app, m), entries[phase], phase, "", 0)
		modules[key] = i
		return i
	}
	hotShare := 0.0
	for _, f := range hot {
		add(app+"."+f.name, module(f.module, f.phase), f.phase, compCPU, f.share)
		hotShare += f.share
	}
	// The tail: Zipf-like shares of the rest of the CPU time.
	weights := make([]float64, tailFunctions)
	sum := 0.0
	for k := range weights {
		weights[k] = 1 / math.Pow(float64(k)+4, 1.1)
		sum += weights[k]
	}
	verbs := []string{"load", "bind", "apply", "resolve", "update", "parse", "build", "check", "merge", "format"}
	nouns := []string{"Item", "View", "Prefs", "Cache", "Theme", "Font", "Route", "Token", "Row", "Span", "Query", "Style"}
	for k, w := range weights {
		tm := tailModules[rng.IntN(len(tailModules))]
		name := fmt.Sprintf("%s.%s.%s%s%d", app, tm.module, verbs[rng.IntN(len(verbs))], nouns[rng.IntN(len(nouns))], k)
		add(name, module(tm.module, tm.phase), tm.phase, compCPU, (1-hotShare)*w/sum)
	}
	// The components that are not CPU work, one function each.
	add("libc.read", module("io", PhaseStartup), PhaseStartup, compRead, 1)
	add("sqlite3.query", module("db", PhaseStartup), PhaseStartup, compState, 1)
	add("art.gc.collect", entries[PhaseStartup], PhaseStartup, compLinger, 1)
	add("okhttp.Call.await", entries[PhaseNetwork], PhaseNetwork, compNetwork, 1)
	add("sqlite3.fsync", module("db", PhaseFirstFrame), PhaseFirstFrame, compWrite, 1)
	return t
}

// Functions lists the functions that do work (self time), hottest first.
func (t *CallTree) Functions() []string {
	var out []string
	idx := make([]int, 0, len(t.nodes))
	for i, n := range t.nodes {
		if n.comp == compCPU {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return t.nodes[idx[a]].share > t.nodes[idx[b]].share })
	for _, i := range idx {
		out = append(out, t.nodes[i].name)
	}
	return out
}

// Index returns the index of function name; ok is false for a function
// that does no CPU work of its own in this app.
func (t *CallTree) Index(name string) (int, bool) {
	i, ok := t.byName[name]
	if !ok || t.nodes[i].comp != compCPU {
		return 0, false
	}
	return i, true
}

// CheckFunction says whether name is a function a build's effect can slow.
func (t *CallTree) CheckFunction(name string) error {
	if _, ok := t.Index(name); ok {
		return nil
	}
	hot := t.Functions()
	if len(hot) > 5 {
		hot = hot[:5]
	}
	return fmt.Errorf("no function %q doing work in sim app %s (the hottest: %s)", name, t.app, strings.Join(hot, ", "))
}

// shareOf is function i's share of the CPU time.
func (t *CallTree) shareOf(i int) float64 { return t.nodes[i].share }

// stack is function i's call stack, leaf first.
func (t *CallTree) stack(i int) []string {
	var s []string
	for ; i >= 0; i = t.nodes[i].parent {
		s = append(s, t.nodes[i].name)
	}
	return s
}

// Profile samples a launch: each function's time is its share of its
// component's time in the breakdown (CPU with the function effect fnExtra
// added to function fn, fn < 0 for none), jittered by 1% per function (run-to-run variation of its work, as the launch's own 0.8% CPU noise) and
// scaled so that the functions add up to the launch's total; each is
// sampled every SamplePeriodNs (Poisson counts), at times spread over its
// phase, the phases one after the other (startup, network, first frame).
// rng is a stream of its own, so that profiling leaves the launch's
// numbers as they are.
func (t *CallTree) Profile(bd Breakdown, total float64, fn int, fnExtraMs float64, rng *rand.Rand) *lab.Profile {
	comp := map[string]float64{compCPU: bd.CPU, compRead: bd.Read, compWrite: bd.Write, compNetwork: bd.Network,
		compState: bd.State, compLinger: bd.Linger}
	times := make([]float64, len(t.nodes))
	sum := 0.0
	for i, n := range t.nodes {
		if n.comp == "" {
			continue
		}
		x := comp[n.comp] * n.share * math.Max(0, 1+0.01*rng.NormFloat64())
		if i == fn {
			x += fnExtraMs
		}
		times[i] = x
		sum += x
	}
	scale := 1.0
	if sum > 0 {
		scale = total / sum
	}
	p := &lab.Profile{Source: "sim", PeriodNs: SamplePeriodNs}
	phaseMs := map[string]float64{}
	for i, n := range t.nodes {
		times[i] *= scale
		phaseMs[n.phase] += times[i]
	}
	start := map[string]float64{}
	at := 0.0
	for _, ph := range []string{PhaseStartup, PhaseNetwork, PhaseFirstFrame} {
		start[ph] = at
		p.Spans = append(p.Spans, lab.Span{Name: ph, StartNs: int64(at * 1e6), EndNs: int64((at + phaseMs[ph]) * 1e6)})
		at += phaseMs[ph]
	}
	for i, n := range t.nodes {
		if times[i] <= 0 {
			continue
		}
		count := poisson(rng, times[i]*1e6/SamplePeriodNs)
		st := t.stack(i)
		for range count {
			ts := (start[n.phase] + rng.Float64()*phaseMs[n.phase]) * 1e6
			p.Samples = append(p.Samples, lab.ProfileSample{Stack: st, TimeNs: int64(ts)})
		}
	}
	sort.SliceStable(p.Samples, func(a, b int) bool { return p.Samples[a].TimeNs < p.Samples[b].TimeNs })
	return p
}

// poisson draws a Poisson count of mean mu: Knuth's product method for
// small means, the normal approximation (rounded, at least 0) above 50.
func poisson(rng *rand.Rand, mu float64) int {
	if mu <= 0 {
		return 0
	}
	if mu > 50 {
		return max(0, int(math.Round(mu+math.Sqrt(mu)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-mu), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}
