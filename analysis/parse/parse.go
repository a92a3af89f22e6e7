// Package parse reads the sample files `perflab compare` accepts: plain
// numbers (one per line), `go test -bench` output and hyperfine
// --export-json files. It works on bytes already read, so it does no I/O;
// errors name the file and line (or JSON field) at fault.
package parse

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Input formats.
const (
	FormatNumbers   = "numbers"
	FormatGoBench   = "go-bench"
	FormatHyperfine = "hyperfine"
)

// Metric is one named sample of a file.
type Metric struct {
	Name   string
	Unit   string
	Better string // "lower" or "higher"
	Values []float64
}

// File is the parsed content of one input.
type File struct {
	Name    string // as given by the caller, for messages
	Format  string
	Metrics []Metric // in order of first appearance
	Notes   []string // things worth a warning that are no error
}

// Error is a parse error located in a file.
type Error struct {
	File  string
	Line  int    // 1-based; 0 when unknown
	Field string // JSON field path, when relevant
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		loc += ": " + e.Field
	}
	return loc + ": " + e.Msg
}

// Detect guesses the format of data: a JSON object is a hyperfine export,
// text with a benchmark result line is `go test -bench` output, anything
// else is plain numbers.
func Detect(data []byte) string {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return FormatHyperfine
	}
	for line := range bytes.Lines(data) {
		if _, ok := benchResultFields(string(line)); ok {
			return FormatGoBench
		}
	}
	return FormatNumbers
}

// Parse parses data in the format Detect finds.
func Parse(name string, data []byte, opt Options) (*File, error) {
	switch Detect(data) {
	case FormatHyperfine:
		return Hyperfine(name, data)
	case FormatGoBench:
		return GoBench(name, data)
	}
	return Numbers(name, data, opt)
}

// Options tune the plain-number format, which carries no metadata.
type Options struct {
	Name         string // metric name; "value" when empty
	Unit         string
	HigherBetter bool
}

// Numbers parses one number per line. Blank lines and text after '#' are
// ignored. An empty file gives an empty sample; a non-finite value is an
// error.
func Numbers(name string, data []byte, opt Options) (*File, error) {
	m := Metric{Name: opt.Name, Unit: opt.Unit, Better: "lower"}
	if m.Name == "" {
		m.Name = "value"
	}
	if opt.HigherBetter {
		m.Better = "higher"
	}
	m.Values = []float64{}
	n := 0
	for line := range bytes.Lines(data) {
		n++
		s := string(line)
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if f := strings.Fields(s); len(f) > 1 {
			return nil, &Error{File: name, Line: n, Msg: fmt.Sprintf("expected one number per line, found %d fields %q", len(f), s)}
		}
		v, err := parseFinite(s)
		if err != nil {
			return nil, &Error{File: name, Line: n, Msg: err.Error()}
		}
		m.Values = append(m.Values, v)
	}
	return &File{Name: name, Format: FormatNumbers, Metrics: []Metric{m}}, nil
}

// parseFinite parses a finite float64.
func parseFinite(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("%q is out of the range of a float64", s)
		}
		return 0, fmt.Errorf("cannot parse %q as a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("non-finite value %q", s)
	}
	return v, nil
}

// HigherIsBetter reports whether a benchmark unit is a rate, where higher
// values are better (MB/s, ops/s, MFLOPS); everything else (ns/op, B/op,
// allocs/op, sec/op, ...) is a cost.
func HigherIsBetter(unit string) bool {
	return strings.HasSuffix(unit, "/s") || strings.HasSuffix(unit, "FLOPS") || unit == "fps"
}

// collector gathers metric values in order of first appearance.
type collector struct {
	index   map[[2]string]int
	metrics []Metric
}

func (c *collector) add(name, unit, better string, v float64) {
	i := c.declare(name, unit, better)
	c.metrics[i].Values = append(c.metrics[i].Values, v)
}

// declare makes sure the metric exists, even without values, and returns
// its index.
func (c *collector) declare(name, unit, better string) int {
	if c.index == nil {
		c.index = map[[2]string]int{}
	}
	k := [2]string{name, unit}
	i, ok := c.index[k]
	if !ok {
		i = len(c.metrics)
		c.index[k] = i
		c.metrics = append(c.metrics, Metric{Name: name, Unit: unit, Better: better, Values: []float64{}})
	}
	return i
}
