// Package gensession writes synthetic perflab sessions of many trials:
// bench/gensession's, for timing `perflab report` against benchstat, and
// the report benchmarks'.
package gensession

import (
	"bufio"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// Write writes a session of trials trials (half per arm, rounds of one
// control and one treatment trial in random order, three metrics with
// log-normal noise) to path; the treatment is slower by effect (0.01 =
// 1%). The same arguments give the same file.
func Write(path string, trials int, effect float64, seed uint64) error {
	exp := &lab.Experiment{Device: "local", Trials: trials / 2, Order: lab.OrderRandom, Seed: int64(seed), Alpha: 0.05, Confidence: 0.95,
		Builds: map[string]lab.Build{lab.ArmControl: {Command: []string{"./a"}}, lab.ArmTreatment: {Command: []string{"./b"}}}}
	h := sessions.NewHeader("perflab gensession", lab.DeviceInfo{ID: "local", Backend: "local", Caps: []string{}}, exp)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	if err := enc.Encode(h); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	t := 0.0
	arms := []string{lab.ArmControl, lab.ArmTreatment}
	for i := 0; i < trials; i++ {
		if i%2 == 0 && rng.IntN(2) == 1 {
			arms[0], arms[1] = arms[1], arms[0]
		}
		arm := arms[i%2]
		scale := 1.0
		if arm == lab.ArmTreatment {
			scale += effect
		}
		wall := 10 * scale * math.Exp(0.05*rng.NormFloat64())
		d := wall / 1000
		t += d
		e := lab.Event{Type: lab.EventTrial, T: t, Trial: &lab.Trial{
			Index: i, Round: i / 2, Arm: arm, Build: arm, Order: lab.OrderRandom, Status: lab.StatusOK, Duration: d,
			Metrics: []lab.Metric{
				{Name: "wall_ms", Value: wall, Unit: "ms", Better: "lower"},
				{Name: "user_ms", Value: wall * 0.8 * math.Exp(0.02*rng.NormFloat64()), Unit: "ms", Better: "lower"},
				{Name: "sys_ms", Value: wall * 0.1 * math.Exp(0.1*rng.NormFloat64()), Unit: "ms", Better: "lower"},
			}}}
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	if err := enc.Encode(lab.Event{Type: lab.EventEnd, T: t, End: &lab.End{Reason: "completed", Counts: map[string]int{lab.StatusOK: trials}}}); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
