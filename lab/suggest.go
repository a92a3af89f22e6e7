package lab

import (
	"fmt"
	"strings"
)

// Closest returns the candidate within two edits of s (one for names of
// four letters or fewer), the nearest first; else the one candidate s is a
// prefix of ("startup" → "startup_ms"); else "".
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

// CheckMetricName refuses a requested metric that is not one of known but
// one or two letters away from one, a typo that would otherwise fail every
// trial (or, where extra metrics are allowed, record nothing) only once the
// run has started. open says whether names outside known are allowed at
// all (a local command may report any metric); i is the index in
// "metrics".
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
		return fmt.Errorf("metrics[%d]: %q is not measured here; did you mean %q?", i, name, s)
	}
	if !open {
		return fmt.Errorf("metrics[%d]: %q is not measured here (known: %v)", i, name, known)
	}
	return nil
}
