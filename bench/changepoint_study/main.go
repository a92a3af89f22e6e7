// Command changepoint_study measures perflab's change-point detector
// (analysis/changepoint) on seeded synthetic series of 200 points: Gaussian
// noise, slow outliers, single spikes, steps of 1–5σ and slow drifts. It
// prints precision and recall for steps of at least 2σ (located within ±1
// point), false steps per 100 series without a step, spikes taken as
// steps and steps reported on drifts, and how often a single step in the
// middle of a series is located within ±1, for each alpha and minimum
// segment length asked for. docs/history.md gives its figures.
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
	alphas := flag.String("alpha", "1e-3,1e-4,1e-5,1e-6", "alphas to study, comma-separated")
	minSegs := flag.String("min-segment", "5", "minimum segment lengths to study, comma-separated")
	flag.Parse()
	if err := run(*series, *points, *seed, *alphas, *minSegs); err != nil {
		fmt.Fprintln(os.Stderr, "changepoint_study:", err)
		os.Exit(1)
	}
}

func run(series, points int, seed uint64, alphas, minSegs string) error {
	for _, ms := range strings.Split(minSegs, ",") {
		m, err := strconv.Atoi(strings.TrimSpace(ms))
		if err != nil {
			return fmt.Errorf("-min-segment: %w", err)
		}
		for _, as := range strings.Split(alphas, ",") {
			a, err := strconv.ParseFloat(strings.TrimSpace(as), 64)
			if err != nil {
				return fmt.Errorf("-alpha: %w", err)
			}
			res, err := cpstudy.Run(cpstudy.Config{Seed: seed, PerKind: series, N: points,
				Detector: changepoint.Options{MinSegment: m, Alpha: a}})
			if err != nil {
				return err
			}
			res.Write(os.Stdout)
			fmt.Print("one step at the middle, with outliers, located within ±1:")
			for _, size := range []float64{2, 3} {
				f, err := cpstudy.Middle(seed, points, series, size, res.Config.Detector)
				if err != nil {
					return err
				}
				fmt.Printf(" %gσ %.3f", size, f)
			}
			fmt.Print("\n\n")
		}
	}
	return nil
}
