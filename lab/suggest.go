package lab

import (
	"fmt"
	"strings"
)

// Closest returns the candidate nearest to s by edit distance (adjacent
// transpositions count as one edit), or "" when none is close enough to be
// a likely typo: at most one edit for names of four letters or fewer, two
// for longer ones; failing that, the one candidate s (three letters or
// more) is a prefix of ("startup" → "startup_ms"). A candidate equal to s
// is skipped. perflab's command, flag and metric suggestions all use it.
func Closest(s string, candidates []string) string {
	limit := 1
	if len(s) > 4 {
		limit = 2
	}
	best, bestD, prefix, nPrefix := "", limit+1, "", 0
	for _, c := range candidates {
		if c == s {
			continue
		}
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
		if len(s) >= 3 && strings.HasPrefix(c, s) {
			prefix, nPrefix = c, nPrefix+1
		}
	}
	if best == "" && nPrefix == 1 {
		return prefix
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b
// (Levenshtein plus transposition of adjacent characters).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// CheckMetricName refuses a requested metric that is not one of known but
// one or two letters away from one, a typo that would otherwise fail every
// trial (or, where extra metrics are allowed, record nothing) only once the
// run has started. open says whether names outside known are allowed at
// all (a local command may report any metric); i is the index in
// "metrics". A closed set is listed in the error.
func CheckMetricName(i int, name string, known []string, open bool) error {
	for _, k := range known {
		if k == name {
			return nil
		}
	}
	if s := Closest(name, known); s != "" {
		if open {
			return fmt.Errorf("metrics[%d]: %q is not measured here; did you mean %q? (a metric the command reports itself must not be a typo away from a built-in one)", i, name, s)
		}
		return fmt.Errorf("metrics[%d]: %q is not measured here; did you mean %q? (known: %v)", i, name, s, known)
	}
	if !open {
		return fmt.Errorf("metrics[%d]: %q is not measured here (known: %v)", i, name, known)
	}
	return nil
}
