// Command profilestudy measures perflab profile's statistics on the
// simulated phone, where the truth is known (issue 26):
//
//   - known truth: feed against feed with one function 3% slower
//     (feed.decodeImage by default: about 0.7% of the whole launch), in how
//     many seeds is it ranked first with p_adjusted < alpha, and how many
//     other functions are reported changed;
//
//   - A/A: feed against feed, the share of runs that report any function
//     changed; under the complete null Benjamini–Hochberg's false discovery
//     rate is the chance of any report, at most alpha, and the binomial band
//     says whether the measured share agrees.
//
//     go run ./bench/profilestudy -truth 10 -aa 200 -rounds 40
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/profdiff"
)

func main() {
	truth := flag.Int("truth", 10, "seeds with a known slowdown")
	aa := flag.Int("aa", 200, "A/A seeds")
	rounds := flag.Int("rounds", 40, "rounds per session")
	fn := flag.String("function", "feed.decodeImage", "the function slowed")
	pct := flag.Float64("pct", 3, "its slowdown, % of its own time")
	parallel := flag.Int("parallel", 2, "sessions at once")
	flag.Parse()
	dir, err := os.MkdirTemp("", "profilestudy")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	type outcome struct {
		first, flaggedOthers int
		anyFlag              bool
		err                  error
	}
	run := func(seed int64, effect *lab.FunctionEffect) outcome {
		exp := bisect.SimTemplate(seed)
		exp.Trials, exp.Profile = *rounds, true
		exp.Builds = map[string]lab.Build{lab.ArmControl: {App: "feed"}, lab.ArmTreatment: {App: "feed", Effect: effect}}
		path := filepath.Join(dir, fmt.Sprintf("s%d-%v.jsonl", seed, effect != nil))
		if _, err := engine.RunSession(context.Background(), bisect.SimLab(), engine.Plan{Experiment: exp, Path: path, Tool: "profilestudy"}); err != nil {
			return outcome{err: err}
		}
		r, err := profdiff.Analyze(path, profdiff.Options{})
		os.RemoveAll(path)
		os.RemoveAll(filepath.Join(dir, fmt.Sprintf("s%d-%v.profiles", seed, effect != nil)))
		if err != nil {
			return outcome{err: err}
		}
		var o outcome
		for i, f := range r.Functions {
			changed := f.Verdict == analysis.VerdictRegression || f.Verdict == analysis.VerdictImprovement
			switch {
			case i == 0 && effect != nil && f.Name == effect.Function && changed:
				o.first = 1
			case changed:
				o.flaggedOthers++
			}
			o.anyFlag = o.anyFlag || changed
		}
		return o
	}
	study := func(n int, effect *lab.FunctionEffect, base int64) []outcome {
		out := make([]outcome, n)
		var wg sync.WaitGroup
		sem := make(chan struct{}, *parallel)
		for i := range n {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				out[i] = run(base+int64(i), effect)
				<-sem
			}()
		}
		wg.Wait()
		return out
	}
	if *truth > 0 {
		os := study(*truth, &lab.FunctionEffect{Function: *fn, Pct: *pct}, 1000)
		first, others := 0, 0
		for _, o := range os {
			if o.err != nil {
				fail(o.err)
			}
			first += o.first
			others += o.flaggedOthers
		}
		fmt.Printf("known truth: %s +%g%%, %d rounds: ranked first and reported in %d of %d seeds; %d other functions reported in all\n",
			*fn, *pct, *rounds, first, *truth, others)
	}
	if *aa > 0 {
		os := study(*aa, nil, 5000)
		k := 0
		for _, o := range os {
			if o.err != nil {
				fail(o.err)
			}
			if o.anyFlag {
				k++
			}
		}
		lo, hi := band(*aa, 0.05)
		fmt.Printf("A/A: %d rounds: %d of %d runs report any function changed (%.1f%%); the 95%% binomial band around 5%% is %d–%d\n",
			*rounds, k, *aa, 100*float64(k)/float64(*aa), lo, hi)
	}
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
