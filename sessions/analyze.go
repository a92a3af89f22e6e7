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
// replay's position).
func MetricInputs(events []lab.Event, upTo ...int) []analysis.MetricInput {
	if len(upTo) > 0 && upTo[0] >= 0 && upTo[0] < len(events) {
		events = events[:upTo[0]]
	}
	var acc Accumulator
	// Size each arm's samples for every counted trial up front: one
	// allocation per sample instead of repeated growth.
	for i := range events {
		if arm, ok := countedArm(&events[i]); ok {
			acc.sizeHint[arm]++
		}
	}
	for i := range events {
		acc.add(&events[i])
	}
	return acc.Inputs()
}

// Accumulator collects metric samples event by event, for live views that
// should not rescan a whole session after every trial. It is the one fold
// of events into analysis inputs: lab/engine's Fold, which every view uses,
// is built on it.
type Accumulator struct {
	index    map[string]int
	ins      []analysis.MetricInput
	ord      [][2][]uint8 // per input and arm: the order mode of each value
	rnd      [][2][]int32 // per input and arm: the round of each value
	orders   []string     // order modes seen in counted trials
	unpaired bool         // a counted trial ran in fixed order: rounds are not pairs
	// A session over a pool of devices: the device of each value (an
	// index into devices), kept once a trial names its device.
	dev      [][2][]uint16
	devices  []string
	devIdx   map[string]uint16
	sizeHint [2]int // capacity of a new metric's samples per arm
}

// countedArm returns the input index of e's arm (0 control, 1 treatment)
// when e is a counted trial.
func countedArm(e *lab.Event) (int, bool) {
	if e.Type != lab.EventTrial || e.Trial == nil || !e.Trial.Counted() {
		return 0, false
	}
	switch e.Trial.Arm {
	case lab.ArmControl:
		return 0, true
	case lab.ArmTreatment:
		return 1, true
	}
	return 0, false
}

// Add takes one event; only counted trials matter.
func (a *Accumulator) Add(e lab.Event) { a.add(&e) }

func (a *Accumulator) add(e *lab.Event) {
	arm, ok := countedArm(e)
	if !ok {
		return
	}
	if a.index == nil {
		a.index = map[string]int{}
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
				a.ins = append(a.ins, analysis.MetricInput{Name: m.Name, Unit: m.Unit, Better: better,
					Samples: [][]float64{make([]float64, 0, a.sizeHint[0]), make([]float64, 0, a.sizeHint[1])}})
				a.ord = append(a.ord, [2][]uint8{make([]uint8, 0, a.sizeHint[0]), make([]uint8, 0, a.sizeHint[1])})
				a.rnd = append(a.rnd, [2][]int32{make([]int32, 0, a.sizeHint[0]), make([]int32, 0, a.sizeHint[1])})
				if a.devIdx != nil {
					a.dev = append(a.dev, [2][]uint16{})
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
	a.dev = make([][2][]uint16, len(a.ins))
	for i := range a.ins {
		for arm := range 2 {
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
// counted as dropped), which makes the paired analysis primary.
func (a *Accumulator) Inputs() []analysis.MetricInput {
	out := make([]analysis.MetricInput, len(a.ins))
	for i, in := range a.ins {
		in.Samples = [][]float64{clip(in.Samples[0]), clip(in.Samples[1])}
		switch {
		case a.unpaired:
		case a.devIdx != nil:
			var strata []uint16
			in.Pairs, strata, in.DroppedRounds = pairPoolRounds(in.Samples[0], in.Samples[1], a.rnd[i], a.dev[i])
			in.Strata = a.devices
			in.PairStrata = make([]int, len(strata))
			for k, s := range strata {
				in.PairStrata[k] = int(s)
			}
		default:
			in.Pairs, in.DroppedRounds = pairRounds(in.Samples[0], in.Samples[1], a.rnd[i][0], a.rnd[i][1])
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
func pairPoolRounds(av, bv []float64, rnd [2][]int32, dev [2][]uint16) (pairs []analysis.Pair, strata []uint16, dropped int) {
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
