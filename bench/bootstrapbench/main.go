// Command bootstrapbench times perflab's bootstrap CI of the median
// difference on two files of numbers and prints the result as JSON. It is
// driven by bench/bootstrap_vs_scipy.py, which times scipy.stats.bootstrap
// on the same data.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/analysis/parse"
)

func main() {
	resamples := flag.Int("resamples", analysis.DefaultResamples, "bootstrap resamples")
	repeat := flag.Int("repeat", 20, "timed repetitions (the minimum and median are reported)")
	classic := flag.Bool("classic", false, "also time classic resampling with quickselect medians")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: bootstrapbench [-resamples N] [-repeat N] [-classic] A.txt B.txt")
		os.Exit(2)
	}
	var samples [2][]float64
	for i := range samples {
		data, err := os.ReadFile(flag.Arg(i))
		if err == nil {
			var f *parse.File
			f, err = parse.Numbers(flag.Arg(i), data, parse.Options{})
			if err == nil {
				samples[i] = f.Metrics[0].Values
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bootstrapbench:", err)
			os.Exit(1)
		}
	}
	out := map[string]any{}
	run := func(name string, fn func([]float64, []float64, float64, int, uint64) (analysis.Bootstrap, []string)) {
		var times []float64
		var bs analysis.Bootstrap
		for i := range *repeat {
			start := time.Now()
			bs, _ = fn(samples[0], samples[1], 0.95, *resamples, uint64(i+1))
			times = append(times, time.Since(start).Seconds())
		}
		out[name] = map[string]any{"seconds": times, "low": bs.Low, "high": bs.High, "se": bs.SE}
	}
	run("perflab", analysis.BootstrapMedianDiff)
	if *classic {
		run("perflab_classic", analysis.BootstrapMedianDiffResampling)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "bootstrapbench:", err)
		os.Exit(1)
	}
}
