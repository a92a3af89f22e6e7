package lab

import (
	"strings"
	"testing"
)

func TestParseMetricLine(t *testing.T) {
	tests := []struct {
		line string
		want Metric
		err  string
	}{
		{"PERFLAB_METRIC startup_ms=12.5", Metric{Name: "startup_ms", Value: 12.5}, ""},
		{"PERFLAB_METRIC fps=59.9 unit=fps better=higher", Metric{Name: "fps", Value: 59.9, Unit: "fps", Better: "higher"}, ""},
		{"  PERFLAB_METRIC\tbytes=1e6   unit=B  ", Metric{Name: "bytes", Value: 1e6, Unit: "B"}, ""},
		{"PERFLAB_METRIC x=-3 better=lower", Metric{Name: "x", Value: -3, Better: "lower"}, ""},
		{"PERFLAB_METRIC", Metric{}, "without name=value"},
		{"PERFLAB_METRIC startup_ms", Metric{}, "want name=value"},
		{"PERFLAB_METRIC =3", Metric{}, "want name=value"},
		{"PERFLAB_METRIC a=abc", Metric{}, "not a finite number"},
		{"PERFLAB_METRIC a=NaN", Metric{}, "not a finite number"},
		{"PERFLAB_METRIC a=+Inf", Metric{}, "not a finite number"},
		{"PERFLAB_METRIC a=1 better=faster", Metric{}, `better="faster"`},
		{"PERFLAB_METRIC a=1 colour=red", Metric{}, `unknown key "colour"`},
		{"PERFLAB_METRIC a=1 ms", Metric{}, `want key=value`},
		{"PERFLAB_METRIC unit=ms a=1", Metric{}, "must be the metric's name=value"},
		{"METRIC a=1", Metric{}, "not a PERFLAB_METRIC line"},
	}
	for _, tt := range tests {
		got, err := ParseMetricLine(tt.line)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.line, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %+v, %v; want %+v", tt.line, got, err, tt.want)
		}
	}
}

func TestIsMetricLine(t *testing.T) {
	for line, want := range map[string]bool{
		"PERFLAB_METRIC a=1": true, "PERFLAB_METRIC": true, " PERFLAB_METRIC\tx": true,
		"PERFLAB_METRICS a=1": false, "log: PERFLAB_METRIC a=1": false, "": false,
	} {
		if got := IsMetricLine(line); got != want {
			t.Errorf("IsMetricLine(%q) = %v", line, got)
		}
	}
}
