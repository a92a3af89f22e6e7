package local

import (
	"fmt"

	"github.com/perflab/perflab/analysis/parse"
	"github.com/perflab/perflab/lab"
)

// OutputGoBench is lab.Build.Output for a command that prints `go test
// -bench` results.
const OutputGoBench = "gobench"

// goBenchMetrics reads a trial's `go test -bench` output: every value–unit
// pair of every result line is a metric (benchstat's reading, through
// analysis/parse), named by the benchmark, with ":UNIT" for units other
// than ns/op and sec/op; a benchmark run more than once in the trial is
// one metric per run, which the analysis refuses (a trial is one run).
func goBenchMetrics(out []byte) ([]lab.Metric, error) {
	f, err := parse.GoBench("stdout", out)
	if err != nil {
		return nil, fmt.Errorf("benchmark output: %v", err)
	}
	if len(f.Metrics) == 0 {
		return nil, fmt.Errorf("benchmark output: no result lines (no benchmark matched, or it failed: see the trial's stderr)")
	}
	var ms []lab.Metric
	for _, m := range f.Metrics {
		if len(m.Values) != 1 {
			return nil, fmt.Errorf("benchmark %s: %d results in one trial, want 1 (-test.count=1)", m.Name, len(m.Values))
		}
		name := m.Name
		if m.Unit != "ns/op" && m.Unit != "sec/op" {
			name += ":" + m.Unit
		}
		ms = append(ms, lab.Metric{Name: name, Value: m.Values[0], Unit: m.Unit, Better: m.Better})
	}
	return ms, nil
}
