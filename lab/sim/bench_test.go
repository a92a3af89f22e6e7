package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// BenchmarkCheckTenMinutes is a ten-minute MFLOPS probe on simulated time
// (600 one-second samples). Target: well under a second.
func BenchmarkCheckTenMinutes(b *testing.B) {
	for i := 0; i < b.N; i++ {
		d, _ := sim.Open("pixel", sim.Options{Seed: 1})
		out := make(chan lab.ProbeSample, 700)
		if err := d.Probe(context.Background(), lab.ProbeOptions{DurationS: 600, IntervalS: 1}, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExperiment200Trials runs a 100-per-arm experiment with every
// control on through the runner. Target: well under a second.
func BenchmarkExperiment200Trials(b *testing.B) {
	b.Setenv("XDG_CONFIG_HOME", b.TempDir())
	exp, err := lab.LoadExperiment("../../examples/sim-controls-on.json")
	if err != nil {
		b.Fatal(err)
	}
	exp.Trials = 100
	start := time.Now()
	for i := 0; i < b.N; i++ {
		d, _ := sim.Open("pixel", sim.Options{})
		n := 0
		for e := range lab.NewRunner(d, exp).Run(context.Background()) {
			if e.Type == lab.EventTrial {
				n++
			}
		}
		d.Close()
		if n < 200 {
			b.Fatalf("%d trials", n)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/experiment")
}
