// Command bisectacc measures perflab bisect's accuracy on the simulated
// phone: ranges of 8–64 sim builds (sim:pixel, every control on, random
// order) with one true step of a given size, or two steps of 1–5%, at
// random places; it reports how often the first bad build (and the second
// step) is found exactly and the trials used.
//
//	go run ./bench/bisectacc -reps 50
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"

	"github.com/perflab/perflab/sessions/bisect"
)

func main() {
	reps := flag.Int("reps", 50, "bisects per case")
	seed := flag.Uint64("seed", 1, "seed of the step places and the sessions")
	parallel := flag.Int("parallel", 2, "bisects at once")
	flag.Parse()
	type result struct {
		first, second bool
		trials, comps int
		err           error
	}
	type kase struct {
		name string
		n    int
		two  bool
		step float64
	}
	var cases []kase
	for _, n := range []int{8, 16, 32, 64} {
		cases = append(cases, kase{fmt.Sprintf("n=%d one step 1%%", n), n, false, 1})
	}
	for _, n := range []int{8, 16, 32, 64} {
		cases = append(cases, kase{fmt.Sprintf("n=%d one step 1-5%%", n), n, false, 0})
	}
	for _, n := range []int{16, 64} {
		cases = append(cases, kase{fmt.Sprintf("n=%d two steps 1-5%%", n), n, true, 0})
	}
	fmt.Printf("%-26s %6s %9s %9s %12s %11s %6s\n", "case", "reps", "exact", "2nd exact", "trials mean", "trials p90", "comps")
	for ci, k := range cases {
		rng := rand.New(rand.NewPCG(*seed, uint64(ci)))
		res := make([]result, *reps)
		sem := make(chan struct{}, *parallel)
		var wg sync.WaitGroup
		for r := range *reps {
			size := func() float64 {
				if k.step > 0 {
					return k.step
				}
				return 1 + 4*rng.Float64()
			}
			at1 := 1 + rng.IntN(k.n-1)
			steps := map[int]float64{at1: size()}
			at2 := -1
			if k.two {
				for at2 < 0 || at2 == at1 {
					at2 = 1 + rng.IntN(k.n-1)
				}
				steps[at2] = size()
			}
			first, second := at1, at2
			if k.two && at2 < at1 {
				first, second = at2, at1
			}
			tmplSeed := int64(*seed)*100003 + int64(ci)*1009 + int64(r)
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				dir, err := os.MkdirTemp("", "bisectacc")
				if err != nil {
					res[r].err = err
					return
				}
				defer os.RemoveAll(dir)
				cfg := bisect.Config{Candidates: bisect.SimRange("feed", k.n, steps), Template: bisect.SimTemplate(tmplSeed), Dir: dir}
				rec, err := bisect.Run(context.Background(), bisect.SimLab(), cfg, nil)
				if err != nil {
					res[r].err = err
					return
				}
				res[r].trials, res[r].comps = rec.TrialsTotal, len(rec.Comparisons)
				res[r].first = rec.FirstBad != nil && rec.FirstBad.Index == first
				if k.two {
					for _, s := range rec.OtherSteps {
						if s.Index == second {
							res[r].second = true
						}
					}
				}
			}()
		}
		wg.Wait()
		var exact, second, comps int
		var trials []int
		for _, r := range res {
			if r.err != nil {
				fmt.Fprintln(os.Stderr, "bisect:", r.err)
				os.Exit(1)
			}
			if r.first {
				exact++
			}
			if r.second {
				second++
			}
			comps += r.comps
			trials = append(trials, r.trials)
		}
		sort.Ints(trials)
		sum := 0
		for _, t := range trials {
			sum += t
		}
		sec := "-"
		if k.two {
			sec = fmt.Sprintf("%.0f%%", 100*float64(second)/float64(*reps))
		}
		fmt.Printf("%-26s %6d %8.0f%% %9s %12.0f %11d %6.1f\n", k.name, *reps, 100*float64(exact)/float64(*reps), sec,
			float64(sum)/float64(len(trials)), trials[len(trials)*9/10], float64(comps)/float64(*reps))
	}
}
