// Command profilestudy measures perflab profile's per-function testing on
// the simulated phone, where the truth is known (issues 26 and 34):
//
//   - detection: feed against feed with one function 3% slower, for
//     functions holding 1–21% of the launch's self time, at 20, 40 and 80
//     rounds: in how many seeds is the function ranked first and reported
//     changed in the declared family (self time, all phases), by each
//     weighting of the functions' tests (weighted Benjamini–Hochberg by
//     share, by its square root, and flat BH); and the oracle's rate, a
//     single paired signed-rank test of the changed function alone at
//     alpha (what a method that knew where to look would find);
//
//   - A/A: feed against feed, the share of runs that report any function
//     changed, in the declared family by each weighting, and, with the
//     default weighting, in each exploratory view (one phase, cumulative
//     time) and in any of the views at all (what an engineer flipping
//     through every view would see); under the complete null the false
//     discovery rate is the chance of any report.
//
//     go run ./bench/profilestudy -aa 0       # detection, 15 minutes on 2 cores
//     go run ./bench/profilestudy -seeds 0    # A/A, 200 runs, 10 minutes
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/profdiff"
)

// defaultFunctions are feed's functions at shares of the launch's self
// time from 21% down to 1% (seed 3, 40 rounds: 20.7, 13.1, 8.5, 5.6,
// 3.8, 2.1, 1.5, 1.0%).
const defaultFunctions = "feed.decodeImage,feed.json.parse,feed.layout.measure,feed.dex.loadClasses," +
	"feed.di.inject,feed.util.loadView1,feed.db.parseToken3,feed.init.resolveFont6"

var verbose = flag.Bool("v", false, "each session's changed function on stderr")

var weightings = []string{profdiff.WeightShare, profdiff.WeightSqrtShare, profdiff.WeightFlat}

func main() {
	seeds := flag.Int("seeds", 10, "seeds per function and round count")
	roundsFlag := flag.String("rounds", "20,40,80", "round counts of the detection study")
	aa := flag.Int("aa", 200, "A/A seeds")
	aaRounds := flag.Int("aa-rounds", 40, "rounds of the A/A sessions")
	fns := flag.String("functions", defaultFunctions, "the functions slowed, one at a time")
	pct := flag.Float64("pct", 3, "the slowdown, % of the function's own time")
	parallel := flag.Int("parallel", 2, "sessions at once")
	flag.Parse()
	var rounds []int
	for _, f := range strings.Split(*roundsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			fail(fmt.Errorf("bad -rounds %q", *roundsFlag))
		}
		rounds = append(rounds, n)
	}
	dir, err := os.MkdirTemp("", "profilestudy")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	if *seeds > 0 {
		detection(dir, strings.Split(*fns, ","), rounds, *seeds, *pct, *parallel)
	}
	if *aa > 0 {
		aaStudy(dir, *aa, *aaRounds, *parallel)
	}
	fmt.Printf("\n(%s, %d at once)\n", time.Since(start).Round(time.Second), *parallel)
}

// session runs one profiled sim session of feed against feed (the
// treatment with effect), analyses it with each of the views, and removes
// it.
func session(dir string, seed int64, rounds int, effect *lab.FunctionEffect, views []profdiff.Options) ([]*profdiff.Report, error) {
	exp := bisect.SimTemplate(seed)
	exp.Trials, exp.Profile = rounds, true
	exp.Builds = map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed", Effect: effect}}
	name := fmt.Sprintf("s%d-r%d-%v", seed, rounds, effect != nil)
	if effect != nil {
		name += "-" + effect.Function
	}
	path := filepath.Join(dir, name+".jsonl")
	defer os.RemoveAll(path)
	defer os.RemoveAll(filepath.Join(dir, name+".profiles"))
	if _, err := engine.RunSession(context.Background(), bisect.SimLab(), engine.Plan{Experiment: exp, Path: path, Tool: "profilestudy"}); err != nil {
		return nil, err
	}
	var out []*profdiff.Report
	for _, v := range views {
		r, err := profdiff.Analyze(path, v)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// each runs f(i) for i in [0, n), parallel at once.
func each(n, parallel int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			f(i)
			<-sem
		}()
	}
	wg.Wait()
}

func changed(f profdiff.Function) bool {
	return f.Verdict == analysis.VerdictRegression || f.Verdict == analysis.VerdictImprovement
}

func anyChanged(r *profdiff.Report) bool {
	for _, f := range r.Functions {
		if changed(f) {
			return true
		}
	}
	return false
}

func detection(dir string, fns []string, rounds []int, seeds int, pct float64, parallel int) {
	var views []profdiff.Options
	for _, w := range weightings {
		views = append(views, profdiff.Options{Weighting: w})
	}
	type cell struct {
		found  []int // per weighting: ranked first and reported
		others []int // per weighting: other functions reported
		oracle int
		share  float64
	}
	cells := make([][]cell, len(fns))
	for i := range fns {
		cells[i] = make([]cell, len(rounds))
		for j := range rounds {
			cells[i][j] = cell{found: make([]int, len(weightings)), others: make([]int, len(weightings))}
		}
	}
	var mu sync.Mutex
	jobs := len(fns) * len(rounds) * seeds
	each(jobs, parallel, func(k int) {
		i, j, s := k/(len(rounds)*seeds), k/seeds%len(rounds), k%seeds
		fn := fns[i]
		reps, err := session(dir, int64(1000+s), rounds[j], &lab.FunctionEffect{Function: fn, Pct: pct}, views)
		if err != nil {
			fail(err)
		}
		mu.Lock()
		defer mu.Unlock()
		c := &cells[i][j]
		for w, r := range reps {
			total, own := 0.0, 0.0
			for n, f := range r.Functions {
				total += f.AMs
				switch {
				case f.Name == fn:
					own = f.AMs
					if *verbose {
						fmt.Fprintf(os.Stderr, "%s r%d seed %d %s: rank %d p %.2g p adj %.2g Δ %+.2f%% %s\n", fn, rounds[j], s, weightings[w], n, float64(f.P), float64(f.PAdjusted), float64(f.DeltaPct), f.Verdict)
					}
					if n == 0 && changed(f) {
						c.found[w]++
					}
					if w == 0 && float64(f.P) < r.Alpha && f.DeltaPct > 0 {
						c.oracle++
					}
				case changed(f):
					c.others[w]++
				}
			}
			if w == 0 {
				c.share += own / total // this seed's share, summed over seeds
			}
		}
	})
	fmt.Printf("detection: one function %+g%%, ranked first and reported in the declared family (self time, all phases), of %d seeds; oracle: its own signed-rank test alone at alpha\n\n", pct, seeds)
	head := "| function | share |"
	line := "|---|---:|"
	for _, n := range rounds {
		for _, w := range weightings {
			head += fmt.Sprintf(" %s %d |", w, n)
			line += "---:|"
		}
		head += fmt.Sprintf(" oracle %d |", n)
		line += "---:|"
	}
	fmt.Println(head)
	fmt.Println(line)
	others := make([]int, len(weightings))
	for i, fn := range fns {
		row := fmt.Sprintf("| %s | %.1f%% |", fn, 100*cells[i][0].share/float64(seeds))
		for j := range rounds {
			c := cells[i][j]
			for w := range weightings {
				row += fmt.Sprintf(" %d |", c.found[w])
				others[w] += c.others[w]
			}
			row += fmt.Sprintf(" %d |", c.oracle)
		}
		fmt.Println(row)
	}
	fmt.Printf("\nother functions reported changed, over all %d sessions:", jobs)
	for w, name := range weightings {
		fmt.Printf(" %s %d;", name, others[w])
	}
	fmt.Println()
}

func aaStudy(dir string, n, rounds, parallel int) {
	views := []profdiff.Options{}
	names := []string{}
	for _, w := range weightings {
		views = append(views, profdiff.Options{Weighting: w})
		names = append(names, "declared, "+w)
	}
	explore := len(views)
	for _, cum := range []bool{false, true} {
		for _, ph := range []string{"", "startup", "network", "first_frame"} {
			if !cum && ph == "" {
				continue
			}
			views = append(views, profdiff.Options{Cumulative: cum, Phase: ph})
			kind := "self"
			if cum {
				kind = "cumulative"
			}
			if ph == "" {
				ph = "all phases"
			}
			names = append(names, fmt.Sprintf("exploratory, %s, %s", kind, ph))
		}
	}
	counts := make([]int, len(views))
	anyView := 0
	var mu sync.Mutex
	each(n, parallel, func(i int) {
		reps, err := session(dir, int64(5000+i), rounds, nil, views)
		if err != nil {
			fail(err)
		}
		mu.Lock()
		defer mu.Unlock()
		some := false
		for v, r := range reps {
			if anyChanged(r) {
				counts[v]++
				if v == 0 || v >= explore {
					some = true
				}
			}
		}
		if some {
			anyView++
		}
	})
	lo, hi := band(n, 0.05)
	fmt.Printf("\nA/A: %d runs of %d rounds, runs reporting any function changed (the 95%% binomial band around 5%% is %d–%d)\n\n", n, rounds, lo, hi)
	fmt.Println("| view | runs | rate |")
	fmt.Println("|---|---:|---:|")
	for v, name := range names {
		fmt.Printf("| %s | %d | %.1f%% |\n", name, counts[v], 100*float64(counts[v])/float64(n))
	}
	fmt.Printf("| any view at all (declared by share and the %d exploratory) | %d | %.1f%% |\n", len(views)-explore, anyView, 100*float64(anyView)/float64(n))
}

// band is the central 95% range of a binomial(n, p) count (normal
// approximation with continuity correction).
func band(n int, p float64) (int, int) {
	m, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	return max(0, int(math.Floor(m-1.96*sd))), int(math.Ceil(m + 1.96*sd))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "profilestudy:", err)
	os.Exit(1)
}
