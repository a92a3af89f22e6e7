package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
)

// TuneOptions configure a governor sweep.
type TuneOptions struct {
	Duration time.Duration // check window per candidate
	Interval time.Duration
	Size     int
	Realtime bool
	// Steps is how many frequencies are tried per cluster (default 6),
	// spread over the upper 70% of each table.
	Steps int
	// Cooldown is the idle time before each candidate so one check's heat
	// does not leak into the next (default 3 minutes).
	Cooldown  time.Duration
	Stability analysis.StabilityOptions
}

// Candidate is one profile checked by Tune.
type Candidate struct {
	Profile    lab.GovernorProfile `json:"profile"`
	Summary    analysis.Stability  `json:"summary"`
	Mismatches []string            `json:"mismatches,omitempty"`
}

// TuneResult is the outcome of a sweep. Recommended is nil when no
// candidate was stable.
type TuneResult struct {
	Recommended *lab.GovernorProfile `json:"recommended"`
	Candidates  []Candidate          `json:"candidates"`
	// Notes say what was repaired before the sweep (see Result.Notes).
	Notes []string `json:"notes,omitempty"`
}

// Progress reports one finished candidate.
type Progress struct {
	Done, Total int
	Candidate   Candidate
}

// ErrNoStable says no candidate profile was stable.
var ErrNoStable = errors.New("no candidate profile was stable")

// Candidates builds the sweep: the device's current (stock) settings, then
// for each governor in {performance, the cluster's dynamic governor capped
// at max} every combination of Steps frequencies per cluster. Every
// candidate turns thermal core control, input boost and mpdecision off and
// locks the GPU at a mid-low level, as MobileLab did.
func Candidates(l governor.Layout, steps int) []lab.GovernorProfile {
	if steps <= 0 {
		steps = 6
	}
	perCluster := make([][]int, len(l.Clusters))
	for i, c := range l.Clusters {
		perCluster[i] = freqSteps(c.Frequencies, steps)
	}
	govs := []string{"performance"}
	if len(l.Clusters) > 0 {
		for _, g := range []string{"schedutil", "interactive", "ondemand"} {
			ok := true
			for _, c := range l.Clusters {
				ok = ok && c.HasGovernor(g)
			}
			if ok {
				govs = append(govs, g)
				break
			}
		}
	}
	var base lab.GovernorProfile
	off, zero := false, 0
	if l.ThermalCore {
		base.ThermalCore = &off
	}
	if l.InputBoost {
		base.InputBoost = &zero
	}
	if l.MPDecision {
		base.MPDecision = &off
	}
	if l.GPU != "" && len(l.GPUFreqsHz) > 0 {
		g := gpuLock(l.GPUFreqsHz)
		gov := "performance"
		if len(l.GPUGovs) > 0 && !contains(l.GPUGovs, gov) {
			gov = ""
		}
		base.GPU = &lab.GPUSetting{Governor: gov, MinHz: g, MaxHz: g}
	}
	var out []lab.GovernorProfile
	idx := make([]int, len(l.Clusters))
	for _, g := range govs {
		for {
			p := base
			p.Name = g
			for i, c := range l.Clusters {
				f := perCluster[i][idx[i]]
				cs := lab.ClusterSetting{CPUs: append([]int(nil), c.CPUs...), Governor: g, MinKHz: f, MaxKHz: f}
				if g != "performance" {
					cs.MinKHz = c.Frequencies[0]
				}
				p.Clusters = append(p.Clusters, cs)
				p.Name += fmt.Sprintf("-%d", f/1000)
			}
			out = append(out, p)
			// next combination
			i := 0
			for ; i < len(idx); i++ {
				idx[i]++
				if idx[i] < len(perCluster[i]) {
					break
				}
				idx[i] = 0
			}
			if i == len(idx) {
				break
			}
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// freqSteps picks n frequencies from the table, evenly spread from 30% of
// the range to the top.
func freqSteps(table []int, n int) []int {
	if len(table) == 0 {
		return nil
	}
	lo := int(math.Round(0.3 * float64(len(table)-1)))
	cand := table[lo:]
	if len(cand) <= n {
		return append([]int(nil), cand...)
	}
	var out []int
	for i := 0; i < n; i++ {
		j := int(math.Round(float64(i) * float64(len(cand)-1) / float64(n-1)))
		if len(out) == 0 || out[len(out)-1] != cand[j] {
			out = append(out, cand[j])
		}
	}
	return out
}

func gpuLock(freqs []int64) int64 {
	top := freqs[len(freqs)-1]
	for _, f := range freqs {
		if float64(f) >= 0.4*float64(top) {
			return f
		}
	}
	return top
}

// Tune checks the device's stock settings and every candidate profile, and
// recommends the one with the highest mean MFLOPS among those stable for
// the whole window (preferring a fixed lock among near-ties). It restores
// the original settings at the end; saving is the caller's job.
func Tune(ctx context.Context, dev lab.Device, opt TuneOptions, progress func(Progress)) (TuneResult, error) {
	var res TuneResult
	l, err := LayoutFor(ctx, dev)
	if err != nil {
		return res, err
	}
	g, err := GovernorFor(dev)
	if err != nil {
		return res, err
	}
	res.Notes = RepairLeftover(ctx, g)
	orig, err := g.ReadProfile(ctx)
	if err != nil {
		return res, err
	}
	defer Restore(context.WithoutCancel(ctx), g, orig)
	if opt.Cooldown <= 0 {
		opt.Cooldown = 3 * time.Minute
	}
	stock := orig
	stock.Name = "stock"
	cands := append([]lab.GovernorProfile{stock}, Candidates(l, opt.Steps)...)
	for i, p := range cands {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := cool(ctx, dev, opt.Cooldown); err != nil {
			return res, err
		}
		p := p
		r, err := Run(ctx, dev, Options{Resolved: &p, Duration: opt.Duration, Interval: opt.Interval, Size: opt.Size,
			Realtime: opt.Realtime, Keep: true, Stability: opt.Stability, sweeping: true}, nil)
		if err != nil {
			return res, fmt.Errorf("candidate %s: %w", p.Name, err)
		}
		c := Candidate{Profile: p, Summary: r.Stability, Mismatches: r.Mismatches}
		if len(r.Mismatches) > 0 && c.Summary.Verdict == "stable" {
			c.Summary.Verdict = "unstable"
			c.Summary.Reasons = append(c.Summary.Reasons, fmt.Sprintf("settings did not stick: %s", r.Mismatches[0]))
		}
		res.Candidates = append(res.Candidates, c)
		if progress != nil {
			progress(Progress{Done: i + 1, Total: len(cands), Candidate: c})
		}
	}
	res.Recommended = recommend(res.Candidates)
	if res.Recommended == nil {
		return res, ErrNoStable
	}
	return res, nil
}

func recommend(cs []Candidate) *lab.GovernorProfile {
	best := -1
	for i, c := range cs {
		if !c.Summary.Stable() {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		m, bm := c.Summary.MeanMFLOPS.Or(0), cs[best].Summary.MeanMFLOPS.Or(0)
		switch {
		case m > bm*1.005:
			best = i
		case m > bm*0.995 && locked(c.Profile) && !locked(cs[best].Profile):
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	p := cs[best].Profile
	p.Name = "recommended"
	return &p
}

// locked reports whether every cluster has min = max.
func locked(p lab.GovernorProfile) bool {
	for _, c := range p.Clusters {
		if c.MinKHz == 0 || c.MinKHz != c.MaxKHz {
			return false
		}
	}
	return len(p.Clusters) > 0
}

func cool(ctx context.Context, dev lab.Device, d time.Duration) error {
	if i, ok := dev.(Idler); ok {
		return i.Idle(ctx, d)
	}
	return lab.Sleep(ctx, d)
}

// Save writes the result as <model>.json under the profile directory.
func Save(dev lab.Device, res TuneResult, window time.Duration) (string, error) {
	if res.Recommended == nil {
		return "", ErrNoStable
	}
	info := dev.Info()
	model := info.Model
	if model == "" {
		model = info.ID
	}
	t := governor.Tuned{Model: model, Device: info.ID, Created: time.Now().UTC().Truncate(time.Second),
		DurationS: window.Seconds(), Recommended: *res.Recommended}
	for _, c := range res.Candidates {
		b, err := json.Marshal(c)
		if err != nil {
			return "", err
		}
		t.Candidates = append(t.Candidates, b)
	}
	return governor.SaveTuned(t)
}
