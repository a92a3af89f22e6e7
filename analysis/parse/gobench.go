package parse

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// GoBench parses `go test -bench` output (the Go benchmark data format):
// each result line "BenchmarkName-P  N  v1 unit1  v2 unit2 ..." adds one
// value to the metric (name, unit) for every value–unit pair, as benchstat
// does. The "Benchmark" prefix is dropped from names. When one file holds
// the same benchmark name in several packages ("pkg:" lines), those names
// are qualified with the package's last path element. Other lines
// (configuration, PASS, ok, logs) are ignored. A result line with a
// malformed or non-finite value is an error naming the line.
func GoBench(name string, data []byte) (*File, error) {
	type result struct {
		line   int
		pkg    string
		fields []string
	}
	var results []result
	pkgsOf := map[string]map[string]bool{}
	pkg := ""
	n := 0
	for raw := range bytes.Lines(data) {
		n++
		line := string(raw)
		if k, v, ok := configLine(line); ok {
			if k == "pkg" {
				pkg = v
			}
			continue
		}
		f, ok := benchResultFields(line)
		if !ok {
			continue
		}
		if len(f)%2 != 0 {
			return nil, &Error{File: name, Line: n, Msg: fmt.Sprintf("benchmark %s: values and units do not pair up (%d fields after the iteration count)", f[0], len(f)-2)}
		}
		if len(f) == 2 {
			return nil, &Error{File: name, Line: n, Msg: fmt.Sprintf("benchmark %s: no measurements after the iteration count", f[0])}
		}
		results = append(results, result{n, pkg, f})
		if pkgsOf[f[0]] == nil {
			pkgsOf[f[0]] = map[string]bool{}
		}
		pkgsOf[f[0]][pkg] = true
	}
	var c collector
	for _, r := range results {
		bench := strings.TrimPrefix(r.fields[0], "Benchmark")
		if len(pkgsOf[r.fields[0]]) > 1 && r.pkg != "" {
			bench = path.Base(r.pkg) + "." + bench
		}
		for i := 2; i < len(r.fields); i += 2 {
			v, err := parseFinite(r.fields[i])
			if err != nil {
				return nil, &Error{File: name, Line: r.line, Msg: fmt.Sprintf("benchmark %s, unit %q: %v", r.fields[0], r.fields[i+1], err)}
			}
			unit := r.fields[i+1]
			better := "lower"
			if HigherIsBetter(unit) {
				better = "higher"
			}
			c.add(bench, unit, better, v)
		}
	}
	return &File{Name: name, Format: FormatGoBench, Metrics: c.metrics}, nil
}

// benchResultFields splits a benchmark result line: a name starting with
// "Benchmark" followed by a non-lowercase character (or nothing), then an
// iteration count. Lines that only name a benchmark (as -v prints) or
// continue with log text are not results.
func benchResultFields(line string) ([]string, bool) {
	if !strings.HasPrefix(line, "Benchmark") {
		return nil, false
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return nil, false
	}
	rest := strings.TrimPrefix(f[0], "Benchmark")
	if r, _ := utf8.DecodeRuneInString(rest); rest != "" && unicode.IsLower(r) {
		return nil, false
	}
	if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
		return nil, false
	}
	return f, true
}

// configLine recognises a "key: value" configuration line, whose key
// starts with a lowercase letter and holds no spaces.
func configLine(line string) (key, value string, ok bool) {
	k, v, found := strings.Cut(line, ":")
	if !found || k == "" || strings.ContainsAny(k, " \t") {
		return "", "", false
	}
	if r, _ := utf8.DecodeRuneInString(k); !unicode.IsLower(r) {
		return "", "", false
	}
	return k, strings.TrimSpace(v), true
}
