package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis"
)

// compareRun runs `perflab compare` with args and stdin, returning exit
// status, stdout and stderr.
func compareRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runCompare(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// compareJSON runs `perflab compare --json` and decodes the report.
func compareJSON(t *testing.T, args ...string) analysis.Report {
	t.Helper()
	code, out, errs := compareRun(t, "", append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out, "NaN") {
		t.Fatalf("JSON holds NaN:\n%s", out)
	}
	var r analysis.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r
}

func metricByName(t *testing.T, r analysis.Report, name, unit string) analysis.MetricResult {
	t.Helper()
	for _, m := range r.Metrics {
		if m.Name == name && m.Unit == unit {
			return m
		}
	}
	t.Fatalf("no metric %s %s in %+v", name, unit, r.Metrics)
	return analysis.MetricResult{}
}

func TestCompareExamples(t *testing.T) {
	r := compareJSON(t, "examples/compare/bench-quiet.txt", "examples/compare/bench-loaded.txt")
	if len(r.Metrics) != 9 || r.PrimaryTest != "mann-whitney" || r.Correction != "holm" {
		t.Fatalf("report %d metrics, %s, %s", len(r.Metrics), r.PrimaryTest, r.Correction)
	}
	// The run beside a CPU hog is much slower at the parallel analysis...
	if m := metricByName(t, r, "Compare10Metrics-2", "ns/op"); m.Verdict != analysis.VerdictRegression {
		t.Errorf("Compare10Metrics ns/op: %s, want regression", m.Verdict)
	}
	// ...and allocates exactly the same: constant, untestable.
	if m := metricByName(t, r, "Compare10Metrics-2", "allocs/op"); m.Verdict != analysis.VerdictInconclusive || m.A.Median != 539 {
		t.Errorf("allocs/op: %s, median %v", m.Verdict, float64(m.A.Median))
	}

	r = compareJSON(t, "examples/compare/hyperfine-gzip.json")
	if len(r.Inputs) != 2 || r.Inputs[1] != "examples/compare/hyperfine-gzip.json: gzip -6" {
		t.Errorf("inputs %q", r.Inputs)
	}
	if m := r.Metrics[0]; m.Verdict != analysis.VerdictRegression || m.Unit != "s" || m.A.N != 20 {
		t.Errorf("gzip: %s %s n=%d", m.Verdict, m.Unit, m.A.N)
	}

	code, out, _ := compareRun(t, "", "examples/compare/startup-a.txt", "--name", "startup", "examples/compare/startup-b.txt", "--unit", "ms")
	if code != 0 || !strings.Contains(out, "startup  ms") || !strings.Contains(out, "A: examples/compare/startup-a.txt") {
		t.Errorf("exit %d, table:\n%s", code, out)
	}
}

// TestCompareRealGoBench runs the project's own benchmarks twice and
// compares the outputs.
func TestCompareRealGoBench(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	dir := t.TempDir()
	var files []string
	for _, name := range []string{"a.txt", "b.txt"} {
		cmd := exec.Command(gobin, "test", "-run", "XXX", "-bench", "^BenchmarkHodgesLehmann$", "-benchtime", "5x", "-count", "4", "-benchmem", "./analysis/")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go test -bench: %v\n%s", err, out)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	r := compareJSON(t, files...)
	var units []string
	for _, m := range r.Metrics {
		if !strings.HasPrefix(m.Name, "HodgesLehmann") || m.A.N != 4 || m.B.N != 4 {
			t.Errorf("metric %s %s n=%d/%d", m.Name, m.Unit, m.A.N, m.B.N)
		}
		units = append(units, m.Unit)
	}
	if strings.Join(units, ",") != "ns/op,B/op,allocs/op" {
		t.Errorf("units %q", units)
	}
	// Four timings per arm, normally all distinct: the exact Mann–Whitney
	// p-value applies (ties, possible with whole nanoseconds, forbid it).
	if m := r.Metrics[0]; !m.MannWhitney.Exact && !strings.Contains(strings.Join(m.Warnings, " "), "constant") {
		t.Logf("ns/op used the asymptotic test (tied timings?): %+v", m.MannWhitney)
	}
	code, out, _ := compareRun(t, "", files...)
	if code != 0 || !strings.Contains(out, "HodgesLehmann") || !strings.Contains(out, "ns/op") {
		t.Errorf("exit %d, table:\n%s", code, out)
	}
}

// TestCompareRealHyperfine exports a real hyperfine run of two commands
// and compares them.
func TestCompareRealHyperfine(t *testing.T) {
	hf, err := exec.LookPath("hyperfine")
	if err != nil {
		t.Skip("hyperfine not installed (./test.sh installs it)")
	}
	path := filepath.Join(t.TempDir(), "h.json")
	cmd := exec.Command(hf, "-N", "--runs", "6", "--export-json", path, "true", "sleep 0.02")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hyperfine: %v\n%s", err, out)
	}
	r := compareJSON(t, path)
	m := r.Metrics[0]
	if m.Name != "true vs sleep 0.02" || m.A.N != 6 || m.B.N != 6 {
		t.Fatalf("metric %q n=%d/%d", m.Name, m.A.N, m.B.N)
	}
	// No verdict is asserted: it rests on this host's wall clock, which a
	// loaded machine can stall for longer than the sleep. Six distinct
	// timings per command get the exact test; sleeping bounds B below.
	if !m.MannWhitney.Exact {
		t.Errorf("U %v, exact %v", float64(m.MannWhitney.U), m.MannWhitney.Exact)
	}
	if float64(m.B.Median) < 0.02 {
		t.Errorf("B median %v s, want at least 0.02", float64(m.B.Median))
	}
}

func TestCompareInputsAndErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.txt", "10\n11\n12\n13\n14\n15\n16\n17\n")
	b := write("b.txt", "20\n21\n22\n23\n24\n25\n26\n27\n")
	bad := write("bad.txt", "1\n2\nthree\n")
	one := write("one.txt", "5\n")
	benchA := write("old.bench", "BenchmarkX 1 10 ns/op\nBenchmarkX 1 11 ns/op\nBenchmarkOnlyOld 1 5 ns/op\n")
	benchB := write("new.bench", "BenchmarkX 1 20 ns/op\nBenchmarkX 1 21 ns/op\n")
	// Rounds that swing by ±20% with B 1% slower in each: only pairing sees it.
	var pa, pb strings.Builder
	for i := range 12 {
		v := 100 + 20*float64((i*7)%12-6)/6
		fmt.Fprintf(&pa, "%g\n", v)
		fmt.Fprintf(&pb, "%g\n", v*(1.01+0.0005*float64(i%3)))
	}
	roundsA, roundsB := write("ra.txt", pa.String()), write("rb.txt", pb.String())

	cases := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"table", "", []string{a, b}, 0, []string{"regression", "value", "+"}, nil},
		{"regression still exits 0", "", []string{a, b, "--test", "welch"}, 0, []string{"Welch t test"}, nil},
		{"higher is better", "", []string{"--higher-is-better", a, b}, 0, []string{"improvement"}, nil},
		{"stdin", "20\n21\n22\n23\n24\n25\n26\n27\n", []string{a, "-"}, 0, []string{"B: <stdin>", "regression"}, nil},
		{"flags after --", "", []string{"--json", "--", a, b}, 0, []string{`"verdict": "regression"`}, nil},
		{"one value", "", []string{one, b}, 0, []string{"inconclusive", "A has only 1 value"}, nil},
		{"missing metric listed", "", []string{benchA, benchB}, 0, []string{"OnlyOld ns/op is missing from B"}, nil},
		{"three inputs", "", []string{a, b, a}, 0, []string{"C: ", "B median", "C median", "vs A", "+", "▲", "+0.00% (p=1.000 n=8)  ?"}, nil},
		{"three inputs json", "", []string{a, b, a, "--json"}, 0, []string{`"comparisons"`, `"kruskal_wallis_all"`, `"median_ci"`}, nil},
		{"bad line", "", []string{a, bad}, 1, nil, []string{"bad.txt:3: cannot parse \"three\""}},
		{"no such file", "", []string{a, filepath.Join(dir, "nope.txt")}, 1, nil, []string{"nope.txt"}},
		{"stdin twice", "1\n", []string{"-", "-"}, 1, nil, []string{"only once"}},
		{"one input", "", []string{a}, 2, nil, []string{"need at least two inputs"}},
		{"bad alpha", "", []string{a, b, "--alpha", "2"}, 2, nil, []string{"--alpha must be between 0 and 1"}},
		{"bad test", "", []string{a, b, "--test", "t"}, 2, nil, []string{"--test must be mann-whitney or welch"}},
		{"unknown flag", "", []string{a, b, "--frobnicate"}, 2, nil, []string{"flag provided but not defined"}},
		{"higher-is-better on go bench", "", []string{benchA, benchB, "--higher-is-better"}, 1, nil, []string{"apply to plain numbers only"}},
		{"unpaired rounds", "", []string{roundsA, roundsB}, 0, []string{"inconclusive", "more trials per arm"}, nil},
		{"paired rounds", "", []string{roundsA, roundsB, "--paired"}, 0, []string{"paired rounds: Wilcoxon", "pairs", "regression"}, nil},
		{"paired json", "", []string{roundsA, roundsB, "--paired", "--json"}, 0, []string{`"paired": {`, `"ci_low_pct"`, `"method": "paired`}, nil},
		{"paired below threshold", "", []string{roundsA, roundsB, "--paired", "--threshold", "5%"}, 0,
			[]string{"no change", "significant but below the threshold of ±5%", "threshold ±5%"}, nil},
		{"paired unequal", "", []string{a, one, "--paired"}, 1, nil, []string{"--paired pairs value i of A with value i of B"}},
		{"bad threshold", "", []string{a, b, "--threshold", "-1%"}, 2, nil, []string{"want a percentage"}},
		{"help", "", []string{"--help"}, 0, []string{"Usage: perflab compare", "-resamples", "Examples:", "Exit status: 0"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := compareRun(t, c.stdin, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			for _, s := range c.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range c.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
		})
	}
}

func TestCompareSeedReproducible(t *testing.T) {
	args := []string{"examples/compare/startup-a.txt", "examples/compare/startup-b.txt", "--seed", "7", "--resamples", "2000"}
	r1, r2 := compareJSON(t, args...), compareJSON(t, args...)
	b1, b2 := r1.Metrics[0].Bootstrap, r2.Metrics[0].Bootstrap
	if b1.Low != b2.Low || b1.High != b2.High || b1.Resamples != 2000 {
		t.Errorf("same seed, different intervals: %+v vs %+v", b1, b2)
	}
	r3 := compareJSON(t, append(args[:2:2], "--seed", "8")...)
	if r3.Metrics[0].Bootstrap.Low == b1.Low && r3.Metrics[0].Bootstrap.High == b1.High {
		t.Error("different seeds gave identical intervals")
	}
}

// TestCompareHolmSmallN is issue 16 item 1: 3 benchmarks of 4 values each,
// B 50% slower on all. Each Mann–Whitney p is 2/C(8,4) = 0.029, the
// smallest possible, so Holm's adjusted p is at least 0.086: no verdict is
// possible, and the table must say why (inconclusive with the reason), not
// print a verdict; with --correction none all three are regressions.
func TestCompareHolmSmallN(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, scale float64) string {
		var sb strings.Builder
		sb.WriteString("goos: linux\ngoarch: amd64\npkg: example\n")
		for _, bench := range []string{"Parse", "Encode", "Decode"} {
			for i, v := range []float64{100, 102, 101, 103} {
				fmt.Fprintf(&sb, "Benchmark%s-2\t1000\t%g ns/op\n", bench, (v+float64(i%2))*scale)
			}
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a, b := write("a.bench", 1), write("b.bench", 1.5)

	r := compareJSON(t, a, b)
	if len(r.Metrics) != 3 {
		t.Fatalf("%d metrics, want 3", len(r.Metrics))
	}
	for _, m := range r.Metrics {
		if m.Verdict != analysis.VerdictInconclusive {
			t.Errorf("%s: %s, want inconclusive", m.Name, m.Verdict)
		}
		if p := float64(m.MannWhitney.P); p > 0.0286 || p < 0.0285 {
			t.Errorf("%s: p = %v, want 2/70", m.Name, p)
		}
		found := false
		for _, w := range m.Warnings {
			if strings.Contains(w, "after holm correction across 3 tested metrics") && strings.Contains(w, "0.0857") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no warning that holm makes alpha unreachable: %q", m.Name, m.Warnings)
		}
	}
	code, out, _ := compareRun(t, "", a, b)
	if code != 0 || strings.Contains(out, "no change\n") || !strings.Contains(out, "no adjusted p below 0.0857 is possible") {
		t.Errorf("exit %d, table:\n%s", code, out)
	}

	r = compareJSON(t, a, b, "--correction", "none")
	for _, m := range r.Metrics {
		if m.Verdict != analysis.VerdictRegression {
			t.Errorf("--correction none: %s: %s, want regression", m.Name, m.Verdict)
		}
	}
}
