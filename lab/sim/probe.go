package sim

import (
	"context"
	"math"
	"time"

	"github.com/perflab/perflab/lab"
)

// ProbeRun is the MFLOPS probe (a multi-threaded gonum matrix multiply)
// running on the phone: every online core busy.
type ProbeRun struct {
	ph    *Phone
	start float64
}

// StartProbe starts the probe; samples are timed from now.
func (ph *Phone) StartProbe() *ProbeRun {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return &ProbeRun{ph: ph, start: ph.up}
}

// Next runs the probe for interval of device time and returns the sample:
// the mean MFLOPS over the interval, each cluster's frequency read back at
// its end and the SoC temperature.
func (pr *ProbeRun) Next(interval time.Duration) lab.ProbeSample {
	ph := pr.ph
	ph.mu.Lock()
	defer ph.mu.Unlock()
	d := interval.Seconds()
	if d <= 0 {
		d = 1
	}
	n := len(ph.clusters)
	w := work{util: make([]float64, n), busy: make([]float64, n)}
	const dt = 0.05
	var flops, elapsed float64
	for left := d; left > 1e-12; left -= dt {
		s := math.Min(dt, left)
		for i, c := range ph.clusters {
			w.util[i], w.busy[i] = 1, float64(len(c.spec.CPUs))
		}
		ph.step(s, w)
		for _, c := range ph.clusters {
			flops += float64(c.onlineCount()) * float64(c.cur) / 1000 * c.spec.FlopsPerCycle * s
		}
		elapsed += s
	}
	m := flops / elapsed / ph.slowdown * (1 + 0.003*ph.rng.NormFloat64())
	if ph.rng.Float64() < 0.02 {
		m *= 1 - 0.01 - 0.03*ph.rng.Float64() // a background task took a slice
	}
	return lab.ProbeSample{
		T:       round3(ph.up - pr.start),
		MFLOPS:  math.Round(m*10) / 10,
		FreqKHz: ph.curKHz(),
		TempC:   math.Round((ph.temp+0.1*ph.rng.NormFloat64())*10) / 10,
	}
}

// RunProbe streams samples every interval for dur of device time to out,
// pacing at wall-clock speed when realtime is set. It returns ctx.Err() when
// cancelled.
func (ph *Phone) RunProbe(ctx context.Context, dur, interval time.Duration, realtime bool, out chan<- lab.ProbeSample) error {
	if interval <= 0 {
		interval = time.Second
	}
	pr := ph.StartProbe()
	n := int(math.Round(float64(dur) / float64(interval)))
	if n < 1 {
		n = 1
	}
	began := time.Now()
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := pr.Next(interval)
		if realtime {
			wait := time.Until(began.Add(time.Duration(i+1) * interval))
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
			}
		}
		select {
		case out <- s:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
