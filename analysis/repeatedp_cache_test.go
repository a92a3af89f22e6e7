package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// repeatedPFresh is repeatedP as it was before gsPCache: every level the
// bisection tries is walked again from the first round.
func repeatedPFresh(maxK int, obs []float64) float64 {
	rejects := func(a float64) bool {
		w := newGSWalker(a, maxK, gsStepP)
		for k := 2; k < len(obs) && k <= maxK; k++ {
			if obs[k] <= w.next() {
				return true
			}
		}
		return false
	}
	lo, hi := math.Log(1e-9), 0.0
	if !rejects(1) {
		return 1
	}
	if rejects(1e-9) {
		return 1e-9
	}
	for hi-lo > 2e-3 {
		mid := (lo + hi) / 2
		if rejects(math.Exp(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Exp(hi)
}

// cacheTestObs is seeded runs' look p-values as SequentialTest records
// them (log ratios with a drift from none to large, some with rounds past
// the cap), and a few made-up extremes.
func cacheTestObs(seed uint64, d *gsDesign, n int) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	var runs [][]float64
	for i, drift := range []float64{0, 0, 0.05, 0.2, 0.5, 2} {
		st := newSequentialTest(SequentialOptions{Alpha: d.alpha, MaxRounds: d.maxK}, d)
		rounds := d.maxK
		if i%2 == 1 {
			rounds = d.maxK + 3
		}
		for range rounds {
			st.Add(drift*0.1 + 0.1*rng.NormFloat64())
		}
		runs = append(runs, st.obs)
	}
	odd := make([]float64, d.maxK+2)
	for k := range odd {
		switch k % 5 {
		case 0:
			odd[k] = 1
		case 1:
			odd[k] = 1e-300
		case 2:
			odd[k] = math.NaN()
		case 3:
			odd[k] = 0
		default:
			odd[k] = rng.Float64()
		}
	}
	ones := make([]float64, d.maxK+1)
	for k := range ones {
		ones[k] = 1
	}
	return append(runs[:n:n], odd, ones)
}

// TestRepeatedPCacheIdentical checks that the remembered levels give the
// same float64 as walking every level afresh, with the runs' rounds added
// one at a time and interleaved on one shared design, as the suite stop
// rule asks, and on a design whose cache is full after a few levels.
func TestRepeatedPCacheIdentical(t *testing.T) {
	cases := []struct {
		alpha float64
		maxK  int
		runs  int
	}{{0.05, 2, 6}, {0.05, 3, 6}, {0.05, 10, 6}, {0.01, 10, 4}, {0.2, 17, 4}, {0.05, 25, 2}, {0.1, 35, 1}}
	if testing.Short() {
		cases = cases[:5]
	}
	for i, c := range cases {
		for _, capped := range []bool{false, true} {
			d := newGSDesign(c.alpha, c.maxK)
			if capped {
				d.pcache.maxEntries = 5
			}
			runs := cacheTestObs(uint64(i+1), d, c.runs)
			longest := 0
			for _, o := range runs {
				longest = max(longest, len(o))
			}
			distinct := map[float64]bool{}
			for n := 1; n <= longest; n++ {
				for r, o := range runs {
					if n > len(o) {
						continue
					}
					got, want := d.repeatedP(o[:n]), repeatedPFresh(c.maxK, o[:n])
					if math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("α %g, %d rounds, capped %v, run %d, %d looks: %v cached, %v afresh", c.alpha, c.maxK, capped, r, n, got, want)
					}
					distinct[got] = true
				}
			}
			if len(distinct) < 3 {
				t.Errorf("α %g, %d rounds: only %d distinct p-values: the runs do not exercise the bisection", c.alpha, c.maxK, len(distinct))
			}
			if capped && len(d.pcache.m) != 5 {
				t.Errorf("capped cache holds %d levels, want 5", len(d.pcache.m))
			}
		}
	}
}

// TestRepeatedPCacheConcurrent asks one design from several goroutines at
// once, as metrics compared in parallel do (go test -race).
func TestRepeatedPCacheConcurrent(t *testing.T) {
	d := newGSDesign(0.05, 20)
	runs := cacheTestObs(99, d, 6)
	want := make([][]float64, len(runs))
	for r, o := range runs {
		for n := 1; n <= len(o); n++ {
			want[r] = append(want[r], repeatedPFresh(d.maxK, o[:n]))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(runs))
	for g := range 4 {
		for r, o := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 1; n <= len(o); n++ {
					m := n
					if g%2 == 1 { // the other half from the longest first
						m = len(o) + 1 - n
					}
					if got := d.repeatedP(o[:m]); math.Float64bits(got) != math.Float64bits(want[r][m-1]) {
						errs <- fmt.Errorf("goroutine %d, run %d, %d looks: %v cached, %v afresh", g, r, m, got, want[r][m-1])
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRepeatedPCacheBound checks the cache's bound in float64s: entries
// at their largest times the entries allowed.
func TestRepeatedPCacheBound(t *testing.T) {
	for _, maxK := range []int{2, 10, 50, 200, MaxCalibratedRounds} {
		n := gsPCacheEntries(maxK)
		if n < 300 {
			t.Errorf("%d rounds: only %d levels fit", maxK, n)
		}
		w := newGSWalker(1e-9, maxK, gsStepP)
		for range maxK - 1 {
			w.next()
		}
		used := (maxK + 1) + cap(w.src) + cap(w.kernel)
		per := gsPCacheFloats / n
		if used > per {
			t.Errorf("%d rounds: a walker holds %d float64s, the bound allows %d", maxK, used, per)
		}
	}
}
