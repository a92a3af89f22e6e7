package parse

import (
	"fmt"
	"strings"

	"github.com/perflab/perflab/analysis"
)

// Align turns parsed inputs (A, B, C, ...) into the metrics to compare.
//
// When every input holds exactly one metric (plain numbers, a hyperfine
// export of one command), those are compared with each other whatever
// their names, since naming two builds' commands differently is normal.
// Otherwise metrics are matched by name and unit, in order of first
// appearance; a metric missing from some inputs is kept with an empty
// sample there (so it shows as undetermined) and listed in the returned
// notes, never silently dropped.
func Align(files []*File) ([]analysis.MetricInput, []string) {
	var notes []string
	seen := map[string]bool{}
	for _, f := range files {
		for _, n := range f.Notes {
			if !seen[n] {
				seen[n] = true
				notes = append(notes, n)
			}
		}
	}
	single := len(files) > 1
	for _, f := range files {
		if len(f.Metrics) != 1 {
			single = false
		}
	}
	if single {
		first := files[0].Metrics[0]
		in := analysis.MetricInput{Name: first.Name, Unit: first.Unit, Better: first.Better}
		names := []string{}
		for i, f := range files {
			m := f.Metrics[0]
			in.Samples = append(in.Samples, m.Values)
			names = append(names, fmt.Sprintf("%s=%q", letter(i), m.Name))
			if m.Unit != first.Unit {
				notes = append(notes, fmt.Sprintf("%s (%s) measures in %q but A (%s) in %q", letter(i), f.Name, m.Unit, files[0].Name, first.Unit))
			}
		}
		if differ(files) {
			// Hyperfine names samples by command, and builds' commands
			// differ by nature: name the metric after both. Otherwise say
			// that differently named samples are being compared.
			if allFormat(files, FormatHyperfine) {
				if len(files) == 2 {
					in.Name = first.Name + " vs " + files[1].Metrics[0].Name
				}
			} else {
				notes = append(notes, "comparing differently named samples: "+strings.Join(names, ", "))
			}
		}
		return []analysis.MetricInput{in}, notes
	}

	type key struct{ name, unit string }
	var order []key
	better := map[key]string{}
	for _, f := range files {
		for _, m := range f.Metrics {
			k := key{m.Name, m.Unit}
			if _, ok := better[k]; !ok {
				order = append(order, k)
				better[k] = m.Better
			}
		}
	}
	out := make([]analysis.MetricInput, 0, len(order))
	for _, k := range order {
		in := analysis.MetricInput{Name: k.name, Unit: k.unit, Better: better[k]}
		var missing []string
		for i, f := range files {
			var vals []float64
			found := false
			for _, m := range f.Metrics {
				if m.Name == k.name && m.Unit == k.unit {
					vals, found = m.Values, true
					break
				}
			}
			if !found {
				missing = append(missing, fmt.Sprintf("%s (%s)", letter(i), f.Name))
			}
			in.Samples = append(in.Samples, vals)
		}
		if len(missing) > 0 {
			id := k.name
			if k.unit != "" {
				id += " " + k.unit
			}
			notes = append(notes, fmt.Sprintf("%s is missing from %s", id, strings.Join(missing, ", ")))
		}
		out = append(out, in)
	}
	return out, notes
}

func allFormat(files []*File, format string) bool {
	for _, f := range files {
		if f.Format != format {
			return false
		}
	}
	return true
}

func differ(files []*File) bool {
	for _, f := range files[1:] {
		if f.Metrics[0].Name != files[0].Metrics[0].Name {
			return true
		}
	}
	return false
}

// SplitCommands splits a hyperfine export of several commands into one
// input per command, in the export's order, so that
// `hyperfine --export-json x.json ./old ./new` compares old (A) with new (B).
func SplitCommands(f *File) []*File {
	var out []*File
	for _, m := range f.Metrics {
		out = append(out, &File{Name: f.Name + ": " + m.Name, Format: f.Format, Metrics: []Metric{m}, Notes: f.Notes})
	}
	return out
}

// letter names input i: A, B, ..., Z, then #27, ...
func letter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return fmt.Sprintf("#%d", i+1)
}
