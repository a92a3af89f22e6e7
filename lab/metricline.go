package lab

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MetricPrefix starts a line in which a program under test reports one of
// its own metrics: "PERFLAB_METRIC name=value [unit=ms] [better=lower|higher]".
// The same lines work on stdout and over the TCP address perflab passes in
// the PERFLAB_METRICS_ADDR environment variable (on the local device after
// a first line holding PERFLAB_METRICS_TOKEN).
const MetricPrefix = "PERFLAB_METRIC"

// MetricsAddrEnv names the environment variable holding the host:port a
// program may write metric lines to (see MetricsTokenEnv).
const MetricsAddrEnv = "PERFLAB_METRICS_ADDR"

// MetricsTokenEnv names the environment variable holding the local trial's
// secret: a connection to MetricsAddrEnv must send it as its first line, or
// it is ignored, so only the current trial can report metrics.
const MetricsTokenEnv = "PERFLAB_METRICS_TOKEN"

// IsMetricLine reports whether line is meant as a metric line (it may still
// be malformed).
func IsMetricLine(line string) bool {
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, MetricPrefix) &&
		(len(line) == len(MetricPrefix) || line[len(MetricPrefix)] == ' ' || line[len(MetricPrefix)] == '\t')
}

// ParseMetricLine parses one metric line.
func ParseMetricLine(line string) (Metric, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != MetricPrefix {
		return Metric{}, fmt.Errorf("not a %s line", MetricPrefix)
	}
	if len(fields) < 2 {
		return Metric{}, fmt.Errorf("%s without name=value", MetricPrefix)
	}
	name, val, ok := strings.Cut(fields[1], "=")
	if !ok || name == "" {
		return Metric{}, fmt.Errorf("want name=value, got %q", fields[1])
	}
	if name == "unit" || name == "better" {
		return Metric{}, fmt.Errorf("the first field must be the metric's name=value, got %q", fields[1])
	}
	v, err := strconv.ParseFloat(val, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return Metric{}, fmt.Errorf("metric %s: value %q is not a finite number", name, val)
	}
	m := Metric{Name: name, Value: v}
	for _, f := range fields[2:] {
		k, x, ok := strings.Cut(f, "=")
		switch {
		case !ok:
			return Metric{}, fmt.Errorf("metric %s: want key=value, got %q", name, f)
		case k == "unit":
			m.Unit = x
		case k == "better":
			if x != "lower" && x != "higher" {
				return Metric{}, fmt.Errorf("metric %s: better=%q, want lower or higher", name, x)
			}
			m.Better = x
		default:
			return Metric{}, fmt.Errorf("metric %s: unknown key %q (want unit= or better=)", name, k)
		}
	}
	return m, nil
}

// SpanPrefix starts a line in which a program under test reports a phase
// of its own: "PERFLAB_SPAN begin PHASE NS" or "PERFLAB_SPAN end PHASE NS",
// NS its CLOCK_MONOTONIC time in nanoseconds. perflab joins the trial's
// profile samples to the phases by time (the seed's trampoline histories):
// a phase costs the app two lines, not a label per sample.
const SpanPrefix = "PERFLAB_SPAN"

// SpanStart reports whether line (without leading blanks) is a span line.
func SpanStart(line []byte) bool {
	p := SpanPrefix
	return len(line) > len(p) && string(line[:len(p)]) == p && (line[len(p)] == ' ' || line[len(p)] == '\t')
}

// ParseSpanLine parses a span line: the phase and its time (as StartNs for
// a begin, EndNs for an end).
func ParseSpanLine(line string) (sp Span, begin bool, err error) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != SpanPrefix || (f[1] != "begin" && f[1] != "end") {
		return Span{}, false, fmt.Errorf("want %s begin|end PHASE NANOSECONDS, got %q", SpanPrefix, line)
	}
	ns, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil || ns < 0 {
		return Span{}, false, fmt.Errorf("%s: time %q is not a count of nanoseconds", SpanPrefix, f[3])
	}
	if f[1] == "begin" {
		return Span{Name: f[2], StartNs: ns}, true, nil
	}
	return Span{Name: f[2], EndNs: ns}, false, nil
}

// SpanLog pairs an app's span lines into its phases: a begin and the next
// end of the same name make a Span.
type SpanLog struct {
	spans []Span
	open  map[string]int64
}

// Add takes a span line (ParseSpanLine). An end without a begin makes an
// empty span, which Profile.Label notes.
func (l *SpanLog) Add(line string) error {
	sp, begin, err := ParseSpanLine(line)
	if err != nil {
		return err
	}
	if l.open == nil {
		l.open = map[string]int64{}
	}
	if begin {
		l.open[sp.Name] = sp.StartNs
		return nil
	}
	start, ok := l.open[sp.Name]
	if !ok {
		start = sp.EndNs
	}
	delete(l.open, sp.Name)
	l.spans = append(l.spans, Span{Name: sp.Name, StartNs: start, EndNs: sp.EndNs})
	return nil
}

// Spans returns the phases, those begun and never ended last, without an
// end (Profile.Label closes them).
func (l *SpanLog) Spans() []Span {
	out := append([]Span(nil), l.spans...)
	for _, name := range slices.Sorted(maps.Keys(l.open)) {
		out = append(out, Span{Name: name, StartNs: l.open[name]})
	}
	return out
}
