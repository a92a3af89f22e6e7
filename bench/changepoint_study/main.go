// Command changepoint_study measures perflab's change-point detector
// (analysis/changepoint) on seeded synthetic series of 200 points: AR(1)
// Gaussian noise of each lag-1 autocorrelation φ asked for, slow outliers,
// single spikes, steps of 1–6σ anywhere from 6 builds of an end with a
// one-build outlier near one of them, and slow drifts. It prints precision
// and recall for steps of at least 2σ (located within ±2 builds), recall
// by size, by distance to the nearer end and beside the outlier, false
// steps per 100 series without a step, spikes taken as steps and steps
// reported on drifts, and how often a single step in the middle of a
// series is located within ±1, for each φ, alpha and minimum segment
// length asked for. docs/history.md gives its figures;
// bench/changepoint_old.sh runs the same study on an older detector.
//
//	go run ./bench/changepoint_study -series 1000
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/internal/cpstudy"
)

func main() {
	series := flag.Int("series", 1000, "series per family")
	points := flag.Int("n", 200, "points per series")
	seed := flag.Uint64("seed", 1, "seed")
	phis := flag.String("phi", "0,0.3,0.5,0.7", "lag-1 autocorrelations of the noise to study, comma-separated")
	alphas := flag.String("alpha", "0", "alphas to study, comma-separated (0: the detector's default)")
	minSegs := flag.String("min-segment", "0", "minimum segment lengths to study, comma-separated (0: the default)")
	flag.Parse()
	if err := run(*series, *points, *seed, *phis, *alphas, *minSegs); err != nil {
		fmt.Fprintln(os.Stderr, "changepoint_study:", err)
		os.Exit(1)
	}
}

func floats(flagName, list string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("-%s: %w", flagName, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func run(series, points int, seed uint64, phis, alphas, minSegs string) error {
	ph, err := floats("phi", phis)
	if err != nil {
		return err
	}
	al, err := floats("alpha", alphas)
	if err != nil {
		return err
	}
	ms, err := floats("min-segment", minSegs)
	if err != nil {
		return err
	}
	for _, phi := range ph {
		for _, m := range ms {
			for _, a := range al {
				opt := changepoint.Options{MinSegment: int(m), Alpha: a}
				res, err := cpstudy.Run(cpstudy.Config{Seed: seed, PerKind: series, N: points, Phi: phi, Detector: opt})
				if err != nil {
					return err
				}
				res.Write(os.Stdout)
				fmt.Print("one step at the middle, with outliers, located within ±1:")
				for _, size := range []float64{2, 3} {
					f, err := cpstudy.Middle(seed, points, series, size, phi, opt)
					if err != nil {
						return err
					}
					fmt.Printf(" %gσ %.3f", size, f)
				}
				fmt.Print("\n\n")
			}
		}
	}
	return nil
}
