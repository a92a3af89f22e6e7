package profdiff

import "sort"

// The call graph of the differential profile: which reported functions
// are outermost (for cumulative totals) and each function's callers and
// callees.

// outermost keeps the functions of set none of whose callers, at any
// depth (over every stack of the pairs' trials), is in set: their
// cumulative times do not nest, so they add up. A function called both
// under a member and elsewhere is left out, so the sum errs low rather
// than counting time twice.
func outermost(set map[string]bool, pairs []pair) map[string]bool {
	callers := map[string]map[string]bool{}
	for _, p := range pairs {
		for _, tp := range []*trialProfile{p.a, p.b} {
			for e := range tp.edges {
				if callers[e[0]] == nil {
					callers[e[0]] = map[string]bool{}
				}
				callers[e[0]][e[1]] = true
			}
		}
	}
	out := map[string]bool{}
	for f := range set {
		seen := map[string]bool{f: true}
		queue := []string{f}
		nested := false
		for len(queue) > 0 && !nested {
			g := queue[0]
			queue = queue[1:]
			for c := range callers[g] {
				if set[c] && c != f {
					nested = true
				}
				if !seen[c] {
					seen[c] = true
					queue = append(queue, c)
				}
			}
		}
		if !nested {
			out[f] = true
		}
	}
	return out
}

// addEdges lists each function's top callers and callees over the pairs.
func addEdges(fs []Function, pairs []pair) {
	idx := map[string]int{}
	for i, f := range fs {
		idx[f.Name] = i
	}
	callers := make([]map[string]int64, len(fs))
	callees := make([]map[string]int64, len(fs))
	for _, p := range pairs {
		for _, tp := range []*trialProfile{p.a, p.b} {
			for e, n := range tp.edges {
				if i, ok := idx[e[0]]; ok {
					if callers[i] == nil {
						callers[i] = map[string]int64{}
					}
					callers[i][e[1]] += n
				}
				if i, ok := idx[e[1]]; ok {
					if callees[i] == nil {
						callees[i] = map[string]int64{}
					}
					callees[i][e[0]] += n
				}
			}
		}
	}
	top := func(m map[string]int64) []Edge {
		var out []Edge
		for n, c := range m {
			out = append(out, Edge{n, c})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Samples != out[j].Samples {
				return out[i].Samples > out[j].Samples
			}
			return out[i].Name < out[j].Name
		})
		return out[:min(len(out), maxEdges)]
	}
	for i := range fs {
		fs[i].Callers, fs[i].Callees = top(callers[i]), top(callees[i])
	}
}
