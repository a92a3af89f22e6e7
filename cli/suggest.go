package cli

import (
	"flag"
	"fmt"
	"strings"
)

// closest returns the candidate nearest to s by edit distance (adjacent
// transpositions count as one edit), or "" when none is close enough to be
// a likely typo: at most one edit for short words, two for longer ones, or
// s being an unambiguous prefix.
func closest(s string, candidates []string) string {
	limit := 1
	if len(s) > 4 {
		limit = 2
	}
	best, bestD, prefix := "", limit+1, ""
	nPrefix := 0
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
		if len(s) >= 2 && strings.HasPrefix(c, s) {
			prefix = c
			nPrefix++
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

// parseFlags is fs.Parse that follows an unknown flag's error with the
// nearest defined flag ("did you mean --headless?").
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := closest(name, names); s != "" {
		fmt.Fprintf(fs.Output(), "perflab %s: did you mean --%s?\n", fs.Name(), s)
	}
	return err
}
