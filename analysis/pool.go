package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// PoolAnalysis is the paired analysis of a session over a pool of devices,
// blocked on device. Each round ran on one device, so its log ratio
// log(B/A) is free of that device's offset; the analysis reports each
// device's own paired result, a stratified test over all of them, and
// whether one device's ratios differ from the others' (a broken or hot
// phone).
type PoolAnalysis struct {
	// Devices is each device's own paired analysis (devices with at
	// least one pair), in the session's order.
	Devices []DevicePaired `json:"devices"`
	// Stratified is the stratified signed-rank test over the devices.
	Stratified StratifiedSignedRank `json:"stratified"`
	// Heterogeneity is the Kruskal–Wallis test of the per-round log
	// ratios across devices: a small p says the devices disagree on the
	// change.
	Heterogeneity KruskalWallis `json:"heterogeneity"`
	// HeterogeneityPAdjusted is Heterogeneity's p adjusted by Holm's
	// step-down (Holm 1979, "A simple sequentially rejective multiple test
	// procedure", Scand. J. Statist. 6: 65–70) over the pooled metrics of
	// one report, as the comparisons' own p-values are: with five metrics,
	// one raw p below alpha is what noise gives a quarter of the time. The
	// device-disagreement warning is judged on it. AnalyzePool alone, a
	// family of one, sets it to the raw p.
	HeterogeneityPAdjusted Float `json:"heterogeneity_p_adjusted"`
	// Disagrees names the device farthest from the others when
	// HeterogeneityPAdjusted is below alpha and there are at least three
	// devices ("" otherwise: two devices that disagree cannot say which
	// one is off; the warning names both).
	Disagrees string `json:"disagrees,omitempty"`

	diffs [][]float64 // each device's log ratios, for the warning
	names []string    // their devices
}

// DevicePaired is one device's paired analysis.
type DevicePaired struct {
	Device string `json:"device"`
	Paired
}

// StratifiedSignedRank is a stratified Wilcoxon signed-rank test: the
// signed-rank statistic R+ of each stratum (device) centred on its null
// mean, combined with van Elteren's weights 1/(n+1) (van Elteren 1960,
// "On the combination of independent two-sample tests of Wilcoxon", Bull.
// Int. Statist. Inst. 37, 351–361, the locally most powerful weighting for
// a common shift across strata of unequal size), and referred to the
// normal distribution:
//
//	Z = Σ w_s (R+_s − n_s(n_s+1)/4) / sqrt(Σ w_s² Var_s),
//	Var_s = n_s(n_s+1)(2n_s+1)/24 − Σ_ties (t³−t)/48.
//
// Zero differences are dropped within each stratum before ranking, as
// scipy.stats.wilcoxon's zero_method="wilcox". With one stratum Z and p
// are those of scipy.stats.wilcoxon(d, method="approx", correction=False).
type StratifiedSignedRank struct {
	Strata int   `json:"strata"` // strata with at least one non-zero difference
	N      int   `json:"n"`      // non-zero differences in all strata
	Z      Float `json:"z"`
	P      Float `json:"p"` // two-sided
}

// StratifiedWilcoxon runs the stratified signed-rank test of the given
// strata of differences.
func StratifiedWilcoxon(strata [][]float64) StratifiedSignedRank {
	res := StratifiedSignedRank{Z: undefined(), P: undefined()}
	num, den := 0.0, 0.0
	for _, d := range strata {
		abs := make([]float64, 0, len(d))
		signs := make([]bool, 0, len(d))
		for _, x := range d {
			if x != 0 && !math.IsNaN(x) {
				abs = append(abs, math.Abs(x))
				signs = append(signs, x > 0)
			}
		}
		n := len(abs)
		if n == 0 {
			continue
		}
		ranks, tie := absRanks(abs)
		rplus := 0.0
		for i, r := range ranks {
			if signs[i] {
				rplus += r
			}
		}
		nf := float64(n)
		v := nf*(nf+1)*(2*nf+1)/24 - tie/48
		w := 1 / (nf + 1)
		num += w * (rplus - nf*(nf+1)/4)
		den += w * w * v
		res.Strata++
		res.N += n
	}
	if res.N == 0 || den <= 0 {
		return res
	}
	z := num / math.Sqrt(den)
	res.Z = defined(z)
	res.P = defined(normalTwoSided(z))
	return res
}

// absRanks returns the average ranks of xs (1-based) and the tie term
// Σ (t³ − t) over groups of equal values.
func absRanks(xs []float64) (ranks []float64, tie float64) {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	ranks = make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && xs[idx[j]] == xs[idx[i]] {
			j++
		}
		r := float64(i+j+1) / 2 // average of ranks i+1 … j
		for k := i; k < j; k++ {
			ranks[idx[k]] = r
		}
		t := float64(j - i)
		tie += t*t*t - t
		i = j
	}
	return ranks, tie
}

// AnalyzePool blocks pairs on their device: strata names the devices and
// pairStrata gives each pair's index in strata. It needs pairs from at
// least two devices; ok is false otherwise. Whether a device disagrees
// with the rest is judged by Compare, on the heterogeneity p Holm-adjusted
// over the report's pooled metrics (warnPoolDisagreement), which sets
// Disagrees and HeterogeneityPAdjusted.
func AnalyzePool(pairs []Pair, strata []string, pairStrata []int, alpha, confidence float64, resamples int, seed uint64) (pa PoolAnalysis, ok bool) {
	if len(pairStrata) != len(pairs) {
		return pa, false
	}
	by := make([][]Pair, len(strata))
	for i, p := range pairs {
		if s := pairStrata[i]; s >= 0 && s < len(strata) {
			by[s] = append(by[s], p)
		}
	}
	var diffs [][]float64
	var names []string
	for s, ps := range by {
		if len(ps) == 0 {
			continue
		}
		d, okd := LogRatios(ps)
		if !okd {
			return pa, false
		}
		pr, _ := AnalyzePaired(ps, 0, alpha, confidence, resamples, seed+uint64(s)*0x9e3779b97f4a7c15)
		pa.Devices = append(pa.Devices, DevicePaired{Device: strata[s], Paired: pr})
		diffs = append(diffs, d)
		names = append(names, strata[s])
	}
	if len(diffs) < 2 {
		return PoolAnalysis{}, false
	}
	pa.Stratified = StratifiedWilcoxon(diffs)
	pa.Heterogeneity, _ = KruskalWallisH(diffs...)
	pa.HeterogeneityPAdjusted = pa.Heterogeneity.P
	pa.diffs, pa.names = diffs, names
	return pa, true
}

// disagreement sets Disagrees from HeterogeneityPAdjusted and returns the
// warning ("" when the devices agree at alpha); family is the number of
// pooled metrics it was adjusted over.
func (pa *PoolAnalysis) disagreement(alpha float64, family int) string {
	pa.Disagrees = ""
	p, adj := pa.Heterogeneity.P, pa.HeterogeneityPAdjusted
	if !adj.Defined() || float64(adj) >= alpha || len(pa.diffs) < 2 {
		return ""
	}
	ps := FormatP(float64(p), alpha, 3)
	if family > 1 {
		ps += fmt.Sprintf("; Holm over %d metrics: %s", family, FormatP(float64(adj), alpha, 3))
	}
	diffs, names := pa.diffs, pa.names
	if len(diffs) == 2 {
		return fmt.Sprintf("devices %s and %s disagree: median ratio %+.2f%% vs %+.2f%% (Kruskal–Wallis p=%s): one may be broken or hot; with two devices the data cannot say which",
			names[0], names[1], math.Expm1(medianOf(diffs[0]))*100, math.Expm1(medianOf(diffs[1]))*100, ps)
	}
	// The device whose median ratio is farthest from the median of all
	// the other devices' ratios.
	best, far := -1, -1.0
	var mine, rest float64
	for i := range diffs {
		var others []float64
		for j, d := range diffs {
			if j != i {
				others = append(others, d...)
			}
		}
		mi, mo := medianOf(diffs[i]), medianOf(others)
		if dist := math.Abs(mi - mo); dist > far {
			best, far, mine, rest = i, dist, mi, mo
		}
	}
	pa.Disagrees = names[best]
	return fmt.Sprintf("device %s disagrees with the rest: its median ratio %+.2f%% vs %+.2f%% on the others (Kruskal–Wallis across %d devices, p=%s): a broken or hot phone? Check it, or leave it out",
		names[best], math.Expm1(mine)*100, math.Expm1(rest)*100, len(diffs), ps)
}

// warnPoolDisagreement adjusts the device-heterogeneity p of every pooled
// metric of one report by Holm's step-down (Holm 1979), as warnDrift does
// the trends, and appends each metric's disagreement warning judged on its
// adjusted p.
func warnPoolDisagreement(ms []MetricResult, alpha float64) {
	var idx []int
	var ps []Float
	for i := range ms {
		if ms[i].Pool != nil {
			idx = append(idx, i)
			ps = append(ps, ms[i].Pool.Heterogeneity.P)
		}
	}
	adj, family := Adjust(ps, CorrectionHolm), familySize(ps)
	for k, i := range idx {
		m := &ms[i]
		pa := *m.Pool // the pointer may be shared with the caller's copy
		pa.HeterogeneityPAdjusted = adj[k]
		if msg := pa.disagreement(alpha, family); msg != "" {
			m.Warnings = append(m.Warnings, msg)
		}
		m.Pool = &pa
	}
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return medianSorted(s)
}
