package sessions

import (
	"slices"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// MetricInputs gathers, from the counted trials among events (status ok,
// not warm-ups), one input per metric with Samples[0] the control values
// and Samples[1] the treatment values, in trial order. Metrics appear in the
// order first seen. With upTo, only the first upTo[0] events are used (a
// replay's position). A session of more than two builds needs ArmInputs.
func MetricInputs(events []lab.Event, upTo ...int) []analysis.MetricInput {
	if len(upTo) > 0 && upTo[0] >= 0 && upTo[0] < len(events) {
		events = events[:upTo[0]]
	}
	return ArmInputs(events, 2)
}

// ArmInputs is MetricInputs for a session of arms builds (at least 2):
// Samples[i] holds the values of the arm at lab.ArmIndex i, the base
// first, and each input after the base carries its rounds paired with the
// base's (Pairs for B, MorePairs for C, ...).
func ArmInputs(events []lab.Event, arms int) []analysis.MetricInput {
	acc := Accumulator{Arms: arms}
	// Size each arm's samples for every counted trial up front: one
	// allocation per sample instead of repeated growth.
	for i := range events {
		if arm, ok := countedArm(&events[i]); ok {
			acc.hint(arm)
		}
	}
	for i := range events {
		acc.add(&events[i])
	}
	return acc.Inputs()
}

// Accumulator collects metric samples event by event, for live views that
// should not rescan a whole session after every trial. It is the one fold
// of events into analysis inputs: sessions/engine's Fold, which every view uses,
// is built on it.
type Accumulator struct {
	// Arms is the number of builds of the session (0: 2, control and
	// treatment); inputs have a sample per arm even before its first trial.
	Arms int

	index    map[string]int
	ins      []analysis.MetricInput
	ord      [][][]uint8 // per input and arm: the order mode of each value
	rnd      [][][]int32 // per input and arm: the round of each value
	orders   []string    // order modes seen in counted trials
	unpaired bool        // a counted trial ran in fixed order: rounds are not pairs
	// A session over a pool of devices: the device of each value (an
	// index into devices), kept once a trial names its device.
	dev      [][][]uint16 // per input and arm
	devices  []string
	devIdx   map[string]uint16
	sizeHint []int // capacity of a new metric's samples per arm
}

// countedArm returns the input index of e's arm (lab.ArmIndex: 0 control
// or A, 1 treatment or B, 2 C, ...) when e is a counted trial.
func countedArm(e *lab.Event) (int, bool) {
	if e.Type != lab.EventTrial || e.Trial == nil || !e.Trial.Counted() {
		return 0, false
	}
	return lab.ArmIndex(e.Trial.Arm)
}

// arms is the number of samples per input.
func (a *Accumulator) arms() int { return max(a.Arms, 2) }

func (a *Accumulator) hint(arm int) {
	for len(a.sizeHint) <= arm {
		a.sizeHint = append(a.sizeHint, 0)
	}
	a.sizeHint[arm]++
}

func (a *Accumulator) hintOf(arm int) int {
	if arm < len(a.sizeHint) {
		return a.sizeHint[arm]
	}
	return 0
}

// Add takes one event; only counted trials matter.
func (a *Accumulator) Add(e lab.Event) { a.add(&e) }

func (a *Accumulator) add(e *lab.Event) {
	arm, ok := countedArm(e)
	if !ok || e.Trial.ProfileRound {
		return // a profiled round of a plan that profiles one in K: not for the verdicts
	}
	if a.index == nil {
		a.index = map[string]int{}
	}
	if arm >= a.arms() {
		a.Arms = arm + 1 // a session whose plan did not say: grow
		for i := range a.ins {
			for len(a.ins[i].Samples) < a.Arms {
				a.ins[i].Samples = append(a.ins[i].Samples, nil)
				a.ord[i] = append(a.ord[i], nil)
				a.rnd[i] = append(a.rnd[i], nil)
				if a.devIdx != nil {
					a.dev[i] = append(a.dev[i], nil)
				}
			}
		}
	}
	oi := a.orderIndex(e.Trial.Order)
	if e.Trial.Order != lab.OrderAlternate && e.Trial.Order != lab.OrderRandom {
		a.unpaired = true
	}
	round := int32(min(e.Trial.Round, 1<<31-1))
	if e.Trial.Device != "" && a.devIdx == nil {
		a.startPool()
	}
	var di uint16
	if a.devIdx != nil {
		di = a.deviceIndex(e.Trial.Device)
	}
	for k := range e.Trial.Metrics {
		m := &e.Trial.Metrics[k]
		// Trials usually list their metrics in the same order: try the
		// input at the same position before the map.
		i := k
		if i >= len(a.ins) || a.ins[i].Name != m.Name {
			var seen bool
			if i, seen = a.index[m.Name]; !seen {
				i = len(a.ins)
				a.index[m.Name] = i
				better := m.Better
				if better == "" {
					better = analysis.BetterLower
				}
				n := a.arms()
				in := analysis.MetricInput{Name: m.Name, Unit: m.Unit, Better: better, Samples: make([][]float64, n)}
				ord, rnd := make([][]uint8, n), make([][]int32, n)
				for j := range n {
					in.Samples[j] = make([]float64, 0, a.hintOf(j))
					ord[j] = make([]uint8, 0, a.hintOf(j))
					rnd[j] = make([]int32, 0, a.hintOf(j))
				}
				a.ins = append(a.ins, in)
				a.ord = append(a.ord, ord)
				a.rnd = append(a.rnd, rnd)
				if a.devIdx != nil {
					a.dev = append(a.dev, make([][]uint16, n))
				}
			}
		}
		if a.devIdx != nil {
			a.dev[i][arm] = append(a.dev[i][arm], di)
		}
		a.ins[i].Samples[arm] = append(a.ins[i].Samples[arm], m.Value)
		a.ord[i][arm] = append(a.ord[i][arm], oi)
		a.rnd[i][arm] = append(a.rnd[i][arm], round)
	}
}

// startPool starts keeping each value's device: the values so far (of
// trials that named no device) get device "".
func (a *Accumulator) startPool() {
	a.devIdx = map[string]uint16{"": 0}
	a.devices = []string{""}
	a.dev = make([][][]uint16, len(a.ins))
	for i := range a.ins {
		a.dev[i] = make([][]uint16, len(a.ins[i].Samples))
		for arm := range a.ins[i].Samples {
			a.dev[i][arm] = make([]uint16, len(a.ins[i].Samples[arm]))
		}
	}
}

// deviceIndex numbers a device.
func (a *Accumulator) deviceIndex(d string) uint16 {
	if i, ok := a.devIdx[d]; ok {
		return i
	}
	i := uint16(min(len(a.devices), 1<<16-1))
	a.devices = append(a.devices, d)
	a.devIdx[d] = i
	return i
}

// Devices returns the devices named by the counted trials of a session
// over a pool, in the order first seen (nil for a single device).
func (a *Accumulator) Devices() []string {
	var out []string
	for _, d := range a.devices {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// orderIndex numbers an order mode.
func (a *Accumulator) orderIndex(o string) uint8 {
	for i, x := range a.orders {
		if x == o {
			return uint8(i)
		}
	}
	a.orders = append(a.orders, o)
	return uint8(len(a.orders) - 1)
}

// OrderModes returns the order modes seen in counted trials and, for input
// i, the mode index of each control and treatment value (for the
// order-effect test). The slices are shared; callers must not modify them.
func (a *Accumulator) OrderModes(i int) (modes []string, ctl, trt []uint8) {
	return clip(a.orders), clip(a.ord[i][0]), clip(a.ord[i][1])
}

func clip[T any](s []T) []T { return s[:len(s):len(s)] }

// Inputs returns the inputs so far. The slices are shared with the
// accumulator; callers must not modify them. When every counted trial ran
// in alternate or random order, each input also carries its rounds as
// pairs (one A and one B; other rounds, broken by a failed trial, are
// counted as dropped), which makes the paired analysis primary; with more
// builds, each one after B is paired with the base the same way
// (MorePairs).
func (a *Accumulator) Inputs() []analysis.MetricInput {
	out := make([]analysis.MetricInput, len(a.ins))
	for i, in := range a.ins {
		in.Samples = make([][]float64, len(a.ins[i].Samples))
		for j, s := range a.ins[i].Samples {
			in.Samples[j] = clip(s)
		}
		switch {
		case a.unpaired:
		case a.devIdx != nil:
			var strata []uint16
			in.Pairs, strata, in.DroppedRounds = pairPoolRounds(in.Samples[0], in.Samples[1], a.rnd[i][0], a.rnd[i][1], a.dev[i][0], a.dev[i][1])
			in.Strata = a.devices
			in.PairStrata = make([]int, len(strata))
			for k, s := range strata {
				in.PairStrata[k] = int(s)
			}
			// Builds after B: paired with the base by round, without
			// the blocks by device (analysed as plain pairs).
			for j := 2; j < len(in.Samples); j++ {
				p, _, d := pairPoolRounds(in.Samples[0], in.Samples[j], a.rnd[i][0], a.rnd[i][j], a.dev[i][0], a.dev[i][j])
				in.MorePairs = append(in.MorePairs, p)
				in.MoreDropped = append(in.MoreDropped, d)
			}
		default:
			in.Pairs, in.DroppedRounds = pairRounds(in.Samples[0], in.Samples[1], a.rnd[i][0], a.rnd[i][1])
			for j := 2; j < len(in.Samples); j++ {
				p, d := pairRounds(in.Samples[0], in.Samples[j], a.rnd[i][0], a.rnd[i][j])
				in.MorePairs = append(in.MorePairs, p)
				in.MoreDropped = append(in.MoreDropped, d)
			}
		}
		out[i] = in
	}
	return out
}

// Paired reports whether the inputs are analysed as pairs of rounds: no
// counted trial ran in fixed order.
func (a *Accumulator) Paired() bool { return !a.unpaired && len(a.ins) > 0 }

// pairRounds merges the two arms' values by round (each arm's rounds are
// non-decreasing, in trial order): a round with exactly one value per arm
// is a pair, any other round is dropped, except the last round with a
// single value, which may still be in progress and is left out uncounted.
func pairRounds(av, bv []float64, ar, br []int32) (pairs []analysis.Pair, dropped int) {
	pairs = make([]analysis.Pair, 0, min(len(ar), len(br))) // at most one pair per value of each arm
	i, j := 0, 0
	for i < len(ar) || j < len(br) {
		r := int32(1<<31 - 1)
		if i < len(ar) {
			r = ar[i]
		}
		if j < len(br) && br[j] < r {
			r = br[j]
		}
		ni, nj := i, j
		for ni < len(ar) && ar[ni] == r {
			ni++
		}
		for nj < len(br) && br[nj] == r {
			nj++
		}
		last := ni == len(ar) && nj == len(br)
		switch {
		case ni-i == 1 && nj-j == 1:
			pairs = append(pairs, analysis.Pair{A: av[i], B: bv[j]})
		case last && ni-i+nj-j == 1: // pending
		default:
			dropped++
		}
		i, j = ni, nj
	}
	return pairs, dropped
}

// pairPoolRounds pairs the values of a session over a pool of devices,
// whose rounds interleave (each device runs its own, side by side): a
// round with exactly one value per arm is a pair, with its device; a round
// with a single value that is its device's latest round may still be in
// progress and is left out uncounted; any other round is dropped. Pairs
// come in round order.
func pairPoolRounds(av, bv []float64, ar, br []int32, ad, bd []uint16) (pairs []analysis.Pair, strata []uint16, dropped int) {
	rnd, dev := [2][]int32{ar, br}, [2][]uint16{ad, bd}
	type round struct {
		a, b   []int
		device uint16
	}
	byRound := map[int32]*round{}
	latest := map[uint16]int32{}
	for arm := range 2 {
		for k, r := range rnd[arm] {
			x := byRound[r]
			if x == nil {
				x = &round{device: dev[arm][k]}
				byRound[r] = x
			}
			if arm == 0 {
				x.a = append(x.a, k)
			} else {
				x.b = append(x.b, k)
			}
			if l, ok := latest[dev[arm][k]]; !ok || r > l {
				latest[dev[arm][k]] = r
			}
		}
	}
	keys := make([]int32, 0, len(byRound))
	for r := range byRound {
		keys = append(keys, r)
	}
	slices.Sort(keys)
	for _, r := range keys {
		x := byRound[r]
		switch {
		case len(x.a) == 1 && len(x.b) == 1:
			pairs = append(pairs, analysis.Pair{A: av[x.a[0]], B: bv[x.b[0]]})
			strata = append(strata, x.device)
		case len(x.a)+len(x.b) == 1 && latest[x.device] == r: // pending
		default:
			dropped++
		}
	}
	return pairs, strata, dropped
}
