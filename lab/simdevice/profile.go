package simdevice

import (
	"math/rand/v2"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// recording is a simpleperf record of one app running on the phone.
type recording struct {
	pkg    string
	period int64 // ns of CPU time per sample
	prof   lab.Profile
}

// StartProfile implements shell.Profiler: the samples of pkg's launches
// from now until stop.
func (a *adapter) StartProfile(pkg string, periodNs int64) (func() *lab.Profile, error) {
	r := &recording{pkg: pkg, period: periodNs, prof: lab.Profile{Source: "simpleperf", PeriodNs: periodNs}}
	a.mu.Lock()
	if a.records == nil {
		a.records = map[*recording]bool{}
	}
	a.records[r] = true
	a.mu.Unlock()
	return func() *lab.Profile {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.records, r)
		p := r.prof
		return &p
	}, nil
}

// profile samples launch l of pkg, begun at uptime t0, over its app's call
// tree (sim.LaunchProfile, the sim device's own profile of a launch), on
// the phone's uptime clock: its phases are what the app reports, and the
// simpleperf records of pkg running get its samples, thinned to their
// rate. nil for a package without a call tree. Its random stream is its
// own: the launch's numbers stay as they are.
func (a *adapter) profile(pkg string, l sim.Launch, t0 time.Duration) *lab.Profile {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.launches++
	rng := rand.New(rand.NewPCG(uint64(a.Phone.Seed()), 0x73696d70<<20^a.launches))
	p := sim.LaunchProfile(pkg, l, rng)
	if p == nil {
		return nil
	}
	off := int64(t0)
	for i := range p.Spans {
		p.Spans[i].StartNs += off
		p.Spans[i].EndNs += off
	}
	for i := range p.Samples {
		p.Samples[i].TimeNs += off
	}
	for r := range a.records {
		if r.pkg != pkg {
			continue
		}
		// Keeping each sample with probability period/r.period turns
		// Poisson counts at the sim's rate into Poisson counts at r's.
		keep := float64(p.PeriodNs) / float64(r.period)
		for _, s := range p.Samples {
			if keep >= 1 || rng.Float64() < keep {
				r.prof.Samples = append(r.prof.Samples, s)
			}
		}
	}
	return p
}
