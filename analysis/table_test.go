package analysis

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func tableInputs() []MetricInput {
	return []MetricInput{
		{Name: "startup", Unit: "ms", Samples: [][]float64{
			{101, 99, 100, 102, 98, 100, 101, 99, 100, 103},
			{106, 104, 105, 107, 103, 105, 106, 104, 105, 108},
			{100, 101, 99, 100, 102, 98, 100, 101, 99, 100}}},
		{Name: "frame_rate", Unit: "fps", Better: BetterHigher, Samples: [][]float64{
			{58.1, 59.9, 60.2, 59.4, 58.8, 60.1, 59.7, 59.2, 60.0, 59.5},
			{59.0, 60.3, 59.9, 58.7, 59.6, 60.2, 59.1, 59.8, 60.4, 59.3}}},
		{Name: "bytes_written", Unit: "B", Samples: [][]float64{
			{4.2e6, 4.2e6, 4.2e6, 4.2e6}, {4.2e6, 4.2e6, 4.2e6, 4.2e6}}},
		{Name: "wall", Unit: "s", Samples: [][]float64{{0.0012, 0.0011, 0.0013}, {0.0009}}},
	}
}

func TestTableGolden(t *testing.T) {
	opt := DefaultOptions()
	opt.Labels = []string{"old.txt", "new.txt", "again.txt"}
	golden(t, "table.golden", Table(Compare(tableInputs(), opt)))
	opt.Test = TestWelch
	opt.Correction = CorrectionBonferroni
	opt.Labels = nil
	golden(t, "table_welch.golden", Table(Compare(tableInputs()[:2], opt)))
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{{0, "0"}, {1, "1"}, {99.95, "99.95"}, {1234.6, "1235"}, {999999, "1000k"}, {12345, "12.35k"}, {2.5e6, "2.5M"},
		{0.005, "5m"}, {1.2e-5, "12µ"}, {-3e9, "-3G"}, {1e-20, "1.000e-20"}, {1e300, "1.000e+300"}} {
		if got := fmtNum(Float(c.x)); got != c.want {
			t.Errorf("fmtNum(%g) = %q, want %q", c.x, got, c.want)
		}
	}
	if got := fmtNum(undefined()); got != "n/a" {
		t.Errorf("fmtNum(undefined) = %q", got)
	}
	// p-values are never rounded across alpha (issue 16 item 11).
	for _, c := range []struct {
		p, alpha float64
		want     string
	}{{0.0004, 0.05, "<0.001"}, {0.0123, 0.05, "0.012"}, {1, 0.05, "1.000"},
		{0.04986, 0.05, "0.0499"}, {0.0499996, 0.05, "0.0499996"}, {0.05, 0.05, "0.050"}, {0.0504, 0.05, "0.050"},
		{0.04986, 0.1, "0.050"}, {0.0096, 0.01, "0.0096"}, {0.00995, 0.01, "0.00995"},
		{0.0004, 0.001, "0.0004"}, {0.00099951, 0.001, "0.0009995"}, {0.0011, 0.001, "0.001"}, {0.00104, 0.001, "0.001"}} {
		got := fmtP(Float(c.p), c.alpha)
		if got != c.want {
			t.Errorf("fmtP(%g, alpha %g) = %q, want %q", c.p, c.alpha, got, c.want)
		}
		if q, err := strconv.ParseFloat(got, 64); err == nil && (q < c.alpha) != (c.p < c.alpha) {
			t.Errorf("fmtP(%g, alpha %g) = %q lies on the other side of alpha", c.p, c.alpha, got)
		}
	}
}
