package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCommandGoldens pins the whole output of compare, report, validate and
// order (benchstat's main_test.go style): stdout in testdata/NAME.stdout,
// stderr in testdata/NAME.stderr when there is any; go test -run
// TestCommandGoldens -update rewrites them. Every input is deterministic:
// files in examples/ and testdata/, seeded bootstraps, the seeded
// simulated phone (the report's session was recorded on it from
// testdata/sim-effect.json).
func TestCommandGoldens(t *testing.T) {
	const session = "cli/testdata/sim-effect.jsonl"
	studyExp := []string{"--experiment", "examples/sim-order-clean.json", "--aa", "20", "--quiet"}
	orderExp := []string{"--experiment", "examples/sim-order-carryover.json", "--runs", "4", "--quiet", "--parallel", "2"}
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"compare-bench", []string{"compare", "examples/compare/bench-quiet.txt", "examples/compare/bench-loaded.txt"}, 0},
		{"compare-hyperfine", []string{"compare", "examples/compare/hyperfine-gzip.json"}, 0},
		{"compare-plain", []string{"compare", "examples/compare/startup-a.txt", "--name", "startup", "examples/compare/startup-b.txt", "--unit", "ms"}, 0},
		{"compare-json", []string{"compare", "--json", "examples/compare/startup-a.txt", "examples/compare/startup-b.txt"}, 0},
		{"report", []string{"report", session}, exitRegression},
		{"report-json", []string{"report", session, "--json"}, exitRegression},
		{"report-csv", []string{"report", session, "--csv"}, exitOK},
		{"report-benchstat", []string{"report", session, "--benchstat"}, exitOK},
		{"validate", append([]string{"validate", "sim:pixel", "--parallel", "2"}, studyExp...), exitRegression},                // 20 A/A experiments are too few to judge α (234 can)
		{"validate-json", append([]string{"validate", "sim:pixel", "--json", "--parallel", "2"}, studyExp...), exitRegression}, // too few to judge α
		{"order", append([]string{"order", "sim:pixel"}, orderExp...), exitUnstable},
		{"order-json", append([]string{"order", "sim:pixel", "--json"}, orderExp...), exitUnstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := dispatch(context.Background(), tt.args, &out, &errb)
			if code != tt.code {
				t.Errorf("perflab %s: exit %d, want %d\n%s", strings.Join(tt.args, " "), code, tt.code, errb.String())
			}
			simGolden(t, tt.name+".stdout", out.String())
			if errb.Len() > 0 {
				simGolden(t, tt.name+".stderr", errb.String())
			}
		})
	}
}
