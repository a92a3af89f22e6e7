package parse

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestNumbers(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []float64
		errLine int
		errText string
	}{
		{"plain", "1\n2.5\n-3e2\n", []float64{1, 2.5, -300}, 0, ""},
		{"comments blanks crlf", "# header\r\n\r\n  4 \r\n5 # five\r\n", []float64{4, 5}, 0, ""},
		{"no final newline", "7\n8", []float64{7, 8}, 0, ""},
		{"empty", "", []float64{}, 0, ""},
		{"only comments", "# nothing\n\n", []float64{}, 0, ""},
		{"word", "1\n2\nabc\n", nil, 3, `cannot parse "abc"`},
		{"two fields", "1\n2 3\n", nil, 2, "one number per line"},
		{"nan", "NaN\n", nil, 1, "non-finite"},
		{"inf", "1\n-Inf\n", nil, 2, "non-finite"},
		{"overflow", "1e400\n", nil, 1, "out of the range"},
		{"comma decimal", "1,5\n", nil, 1, `cannot parse "1,5"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Numbers("x.txt", []byte(c.in), Options{})
			if c.errText != "" {
				var pe *Error
				if !errors.As(err, &pe) || pe.Line != c.errLine || pe.File != "x.txt" || !strings.Contains(err.Error(), c.errText) {
					t.Fatalf("error %v, want x.txt line %d containing %q", err, c.errLine, c.errText)
				}
				if !strings.HasPrefix(err.Error(), "x.txt:"+strconv.Itoa(c.errLine)+": ") {
					t.Errorf("error %q does not start with file:line", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Metrics[0].Values; !reflect.DeepEqual(got, c.want) {
				t.Errorf("values %v, want %v", got, c.want)
			}
		})
	}
	f, err := Numbers("fps.txt", []byte("60\n"), Options{Name: "fps", Unit: "frames/s", HigherBetter: true})
	if err != nil {
		t.Fatal(err)
	}
	if m := f.Metrics[0]; m.Name != "fps" || m.Unit != "frames/s" || m.Better != "higher" {
		t.Errorf("metric %+v", m)
	}
}

func TestGoBenchRealOutput(t *testing.T) {
	// testdata/gobench.txt is real output of
	// go test -run XXX -bench 'HodgesLehmann|Compare10' -benchtime 10x -count 3 -benchmem ./analysis/
	data, err := os.ReadFile("testdata/gobench.txt")
	if err != nil {
		t.Fatal(err)
	}
	if Detect(data) != FormatGoBench {
		t.Fatalf("Detect = %s", Detect(data))
	}
	f, err := GoBench("gobench.txt", data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range f.Metrics {
		got = append(got, m.Name+" "+m.Unit+" "+m.Better+" "+strconv.Itoa(len(m.Values)))
	}
	want := []string{
		"HodgesLehmann-2 ns/op lower 3", "HodgesLehmann-2 B/op lower 3", "HodgesLehmann-2 allocs/op lower 3",
		"Compare10Metrics-2 ns/op lower 3", "Compare10Metrics-2 B/op lower 3", "Compare10Metrics-2 allocs/op lower 3",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metrics\n%q\nwant\n%q", got, want)
	}
	if v := f.Metrics[0].Values[0]; v != 550889 {
		t.Errorf("first value %v", v)
	}
}

func TestGoBench(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []string // "name unit better values..."
		errLine int
		errText string
	}{
		{"rates and custom units", "BenchmarkRead/size=1k-8  100  12.5 ns/op  80.0 MB/s  3 widgets\n",
			[]string{"Read/size=1k-8 ns/op lower 12.5", "Read/size=1k-8 MB/s higher 80", "Read/size=1k-8 widgets lower 3"}, 0, ""},
		{"verbose name lines and logs ignored",
			"=== RUN x\nBenchmarkFoo\nBenchmarkFoo-2 some log text\nBenchmarkFoo-2  5  10 ns/op\nBenchmarkfoo 1 2 ns/op\nPASS\n",
			[]string{"Foo-2 ns/op lower 10"}, 0, ""},
		{"same name in two packages",
			"pkg: example.com/a\nBenchmarkX 1 1 ns/op\npkg: example.com/b\nBenchmarkX 1 2 ns/op\nBenchmarkY 1 3 ns/op\n",
			[]string{"a.X ns/op lower 1", "b.X ns/op lower 2", "Y ns/op lower 3"}, 0, ""},
		{"unpaired", "goos: linux\nBenchmarkFoo 10 5 ns/op 7\n", nil, 2, "do not pair up"},
		{"no measurements", "BenchmarkFoo 10\n", nil, 1, "no measurements"},
		{"bad value", "BenchmarkFoo 10 5x ns/op\n", nil, 1, `cannot parse "5x"`},
		{"non-finite", "BenchmarkFoo 10 NaN ns/op\n", nil, 1, "non-finite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := GoBench("b.txt", []byte(c.in))
			if c.errText != "" {
				var pe *Error
				if !errors.As(err, &pe) || pe.Line != c.errLine || !strings.Contains(err.Error(), c.errText) {
					t.Fatalf("error %v, want line %d containing %q", err, c.errLine, c.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range f.Metrics {
				s := m.Name + " " + m.Unit + " " + m.Better
				for _, v := range m.Values {
					s += " " + strconv.FormatFloat(v, 'g', -1, 64)
				}
				got = append(got, s)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestHyperfine(t *testing.T) {
	// testdata/hyperfine-two-commands.json is a real export of
	// hyperfine --runs 8 --warmup 1 --export-json ... 'sleep 0.005' 'sleep 0.008'
	data, err := os.ReadFile("testdata/hyperfine-two-commands.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("h.json", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Format != FormatHyperfine || len(f.Metrics) != 2 {
		t.Fatalf("format %s, %d metrics", f.Format, len(f.Metrics))
	}
	for i, cmd := range []string{"sleep 0.005", "sleep 0.008"} {
		m := f.Metrics[i]
		if m.Name != cmd || m.Unit != "s" || m.Better != "lower" || len(m.Values) != 8 {
			t.Errorf("metric %d: %s %s %s n=%d", i, m.Name, m.Unit, m.Better, len(m.Values))
		}
	}
	parts := SplitCommands(f)
	if len(parts) != 2 || parts[1].Name != "h.json: sleep 0.008" {
		t.Errorf("SplitCommands: %d parts, second %q", len(parts), parts[1].Name)
	}

	if len(f.Notes) != 0 {
		t.Errorf("notes on a clean export: %q", f.Notes)
	}
	f, err = Hyperfine("h.json", []byte(`{"results":[{"command":"x","times":[1,2,3],"exit_codes":[0,1,0]}]}`))
	if err != nil || len(f.Notes) != 1 || !strings.Contains(f.Notes[0], `"x": 1 of 3 runs exited non-zero`) {
		t.Errorf("failed runs: %v %q", err, f.Notes)
	}
	if _, notes := Align([]*File{f, f}); len(notes) != 1 {
		t.Errorf("Align notes %q, want the failed-run note once", notes)
	}

	bad := []struct {
		name, in, errText string
		line              int
	}{
		{"syntax", "{\n \"results\": [\n  {\"command\": \"x\",\n   \"times\": [1, 2,]}\n]}\n", "invalid JSON", 4},
		{"not hyperfine", `{"foo": 1}`, "results: missing", 0},
		{"null time", `{"results":[{"command":"x","times":[0.1,null]}]}`, "results[0].times[1]: null", 0},
		{"string time", "{\"results\":[{\"command\":\"x\",\n\"times\":[\"1\"]}]}", "expected float64", 2},
		{"no times", `{"results":[{"command":"x","mean":1}]}`, "results[0].times: missing", 0},
		{"no command", `{"results":[{"times":[1]}]}`, "results[0].command: missing", 0},
	}
	for _, c := range bad {
		_, err := Hyperfine("h.json", []byte(c.in))
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.errText) || pe.Line != c.line {
			t.Errorf("%s: error %v, want %q at line %d", c.name, err, c.errText, c.line)
		}
	}
}

func TestDetect(t *testing.T) {
	for in, want := range map[string]string{
		"1\n2\n":                            FormatNumbers,
		"  {\"results\": []}":               FormatHyperfine,
		"goos: linux\nBenchmarkA 1 2 ns/op": FormatGoBench,
		"BenchmarkA\n":                      FormatNumbers, // a name line alone is no result
	} {
		if got := Detect([]byte(in)); got != want {
			t.Errorf("Detect(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestAlign(t *testing.T) {
	num := func(name string, vs ...float64) *File {
		return &File{Name: name, Format: FormatNumbers, Metrics: []Metric{{Name: "value", Better: "lower", Values: vs}}}
	}
	in, notes := Align([]*File{num("a", 1, 2), num("b", 3)})
	if len(in) != 1 || !reflect.DeepEqual(in[0].Samples, [][]float64{{1, 2}, {3}}) || len(notes) != 0 {
		t.Errorf("numbers: %+v %q", in, notes)
	}
	bench := func(name string, metrics ...string) *File {
		f := &File{Name: name, Format: FormatGoBench}
		for _, m := range metrics {
			f.Metrics = append(f.Metrics, Metric{Name: m, Unit: "ns/op", Better: "lower", Values: []float64{1}})
		}
		return f
	}
	in, notes = Align([]*File{bench("old", "X", "Y"), bench("new", "Y", "Z")})
	var names []string
	for _, m := range in {
		names = append(names, m.Name)
	}
	if !reflect.DeepEqual(names, []string{"X", "Y", "Z"}) {
		t.Errorf("names %q", names)
	}
	if in[0].Samples[1] != nil || in[2].Samples[0] != nil {
		t.Errorf("missing samples not empty: %+v", in)
	}
	want := []string{"X ns/op is missing from B (new)", "Z ns/op is missing from A (old)"}
	if !reflect.DeepEqual(notes, want) {
		t.Errorf("notes %q, want %q", notes, want)
	}
}

// checkParsed is what every parser promises on success: finite values and
// metrics with a name and a direction.
func checkParsed(t *testing.T, f *File, err error) {
	t.Helper()
	if err != nil {
		var pe *Error
		if !errors.As(err, &pe) || pe.File != "fuzz" {
			t.Fatalf("error without location: %v", err)
		}
		return
	}
	for _, m := range f.Metrics {
		if m.Better != "lower" && m.Better != "higher" {
			t.Fatalf("metric %q direction %q", m.Name, m.Better)
		}
		for _, v := range m.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite value %v in %q", v, m.Name)
			}
		}
	}
}

func FuzzNumbers(f *testing.F) {
	for _, s := range []string{"1\n2\n", "# c\n 3.5e-3 \r\n", "nan\n", "1 2\n", "", "0x1p-2\n", "1_000\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Numbers("fuzz", data, Options{})
		checkParsed(t, file, err)
		if err != nil {
			return
		}
		// Writing the values back out and parsing again gives them back.
		var sb strings.Builder
		for _, v := range file.Metrics[0].Values {
			sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64) + "\n")
		}
		again, err := Numbers("fuzz", []byte(sb.String()), Options{})
		if err != nil || !reflect.DeepEqual(again.Metrics[0].Values, file.Metrics[0].Values) {
			t.Fatalf("round trip: %v %v vs %v", err, again, file.Metrics[0].Values)
		}
	})
}

func FuzzGoBench(f *testing.F) {
	seed, _ := os.ReadFile("testdata/gobench.txt")
	f.Add(seed)
	for _, s := range []string{"BenchmarkA-8 10 1 ns/op 2 MB/s\n", "pkg: a\nBenchmarkA 1 1 x\npkg: b\nBenchmarkA 1 1 x\n", "BenchmarkA 1 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := GoBench("fuzz", data)
		checkParsed(t, file, err)
	})
}

func FuzzHyperfine(f *testing.F) {
	seed, _ := os.ReadFile("testdata/hyperfine-two-commands.json")
	f.Add(seed)
	for _, s := range []string{`{"results":[{"command":"a","times":[1,2]}]}`, `{"results":null}`, `{"results":[{"command":"a","times":[1e999]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Hyperfine("fuzz", data)
		checkParsed(t, file, err)
		if err == nil {
			Align([]*File{file, file})
		}
	})
}

// TestHyperfineRealSameCommand exports real hyperfine runs of an A/A (two
// commands with the same text) and of two commands named with -n: both
// must give two samples in the export's order.
func TestHyperfineRealSameCommand(t *testing.T) {
	hf, err := exec.LookPath("hyperfine")
	if err != nil {
		t.Skip("hyperfine not installed (./test.sh installs it)")
	}
	cases := []struct {
		args  []string
		names []string
	}{
		{[]string{"true", "true"}, []string{"true", "true #2"}},
		{[]string{"-n", "old", "-n", "new", "true", "true"}, []string{"old", "new"}},
		{[]string{"-n", "same", "-n", "same", "true", "true"}, []string{"same", "same #2"}},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "h.json")
		args := append([]string{"-N", "--runs", "3", "--export-json", path}, c.args...)
		if out, err := exec.Command(hf, args...).CombinedOutput(); err != nil {
			t.Fatalf("hyperfine %q: %v\n%s", args, err, out)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(path, data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		parts := SplitCommands(f)
		var got []string
		for _, p := range parts {
			got = append(got, p.Metrics[0].Name)
			if len(p.Metrics[0].Values) != 3 {
				t.Errorf("%q: %s has %d values, want 3", c.args, p.Metrics[0].Name, len(p.Metrics[0].Values))
			}
		}
		if strings.Join(got, "|") != strings.Join(c.names, "|") {
			t.Errorf("hyperfine %q: samples %q, want %q", c.args, got, c.names)
		}
	}
}
