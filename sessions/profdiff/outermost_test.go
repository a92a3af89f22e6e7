package profdiff

import (
	"slices"
	"testing"
)

// TestOutermost: of the reported functions, only those none of whose
// callers at any depth is reported are summed; recursion and a function
// called both under a reported one and elsewhere are handled.
func TestOutermost(t *testing.T) {
	// main → a → b → c, main → d → c, b → b (recursion), e alone.
	edges := map[[2]string]int64{
		{"a", "main"}: 1, {"b", "a"}: 1, {"c", "b"}: 1, {"d", "main"}: 1, {"c", "d"}: 1, {"b", "b"}: 1,
	}
	tp := &trialProfile{edges: edges}
	pairs := []pair{{a: tp, b: &trialProfile{edges: map[[2]string]int64{}}}}
	for _, c := range []struct {
		set, want []string
	}{
		{[]string{"a", "b", "c"}, []string{"a"}},
		{[]string{"b", "d"}, []string{"b", "d"}},
		{[]string{"c", "d"}, []string{"d"}}, // c is also under b, not reported: left out, not counted twice
		{[]string{"b", "e"}, []string{"b", "e"}},
		{[]string{"main", "c", "e"}, []string{"e", "main"}},
	} {
		set := map[string]bool{}
		for _, f := range c.set {
			set[f] = true
		}
		var got []string
		for f := range outermost(set, pairs) {
			got = append(got, f)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: outermost %v, want %v", c.set, got, c.want)
		}
	}
}
