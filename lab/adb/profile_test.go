package adb_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
)

// reportSample is simpleperf report-sample --show-callchain's text (the
// layout of cmd_report_sample.cpp) for two samples, one with a callchain
// and an unknown frame, one leaf alone.
const reportSample = `meta_info:
  trace_offcpu: false
  event_type: cpu-clock
  app_package_name: com.example.app
sample:
  event_type: cpu-clock
  time: 1000250000
  event_count: 250000
  thread_id: 4321
  thread_name: com.example.app
  vaddr_in_file: 1a2b
  file: /data/app/com.example.app-1/oat/arm64/base.odex
  symbol: com.example.Image.decode
  callchain:
    vaddr_in_file: 3c4d
    file: /data/app/com.example.app-1/oat/arm64/base.odex
    symbol: com.example.Feed.bind
    vaddr_in_file: 99
    file: /system/lib64/libfoo.so
    symbol: libfoo.so[+99]
sample:
  event_type: cpu-clock
  time: 1000500000
  event_count: 240000
  thread_id: 4321
  thread_name: com.example.app
  vaddr_in_file: 10
  file: /apex/com.android.runtime/lib64/bionic/libc.so
  symbol: read
lost_situation:
  sample_count: 2
  lost_count: 3
`

func TestParseReportSample(t *testing.T) {
	p, err := adb.ParseReportSample(strings.NewReader(reportSample))
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != "simpleperf" || p.PeriodNs != 250_000 || len(p.Samples) != 2 {
		t.Fatalf("profile %+v", p)
	}
	s0, s1 := p.Samples[0], p.Samples[1]
	if !slices.Equal(s0.Stack, []string{"com.example.Image.decode", "com.example.Feed.bind", "libfoo.so+0x99"}) ||
		s0.TimeNs != 1000250000 || s0.Weight != 250000 {
		t.Errorf("first sample %+v", s0)
	}
	// Every frame keeps its address in its file and the file's mapping,
	// marked unsymbolized where a frame has no symbol.
	if len(p.Mappings) != 3 || p.Mappings[1] != (lab.Mapping{File: "/system/lib64/libfoo.so", Limit: 0x9a}) || !p.Mappings[0].Symbolized ||
		p.Mappings[0].Limit != 0x3c4e || s0.Frames[2] != (lab.Frame{Addr: 0x99, Mapping: 2}) || s1.Frames[0] != (lab.Frame{Addr: 0x10, Mapping: 3}) {
		t.Errorf("mappings %+v frames %+v %+v", p.Mappings, s0.Frames, s1.Frames)
	}
	if !slices.Equal(s1.Stack, []string{"read"}) || s1.TimeNs != 1000500000 || p.Weight(s1) != 240000 {
		t.Errorf("second sample %+v", s1)
	}
	if len(p.Notes) != 2 || !strings.Contains(p.Notes[0], "1 frames without a symbol") || !strings.Contains(p.Notes[1], "lost 3 samples") {
		t.Errorf("notes %q", p.Notes)
	}

	// Another event than a clock: a sample weighs one period.
	other := strings.ReplaceAll(reportSample, "cpu-clock", "cpu-cycles")
	if p, err := adb.ParseReportSample(strings.NewReader(other)); err != nil || p.Weight(p.Samples[0]) != 250_000 || len(p.Notes) != 3 {
		t.Errorf("cpu-cycles: %v %v", err, p)
	}
}

// TestParseReportSampleErrors: malformed text is an error naming its line;
// a report without samples is an error saying what may be wrong.
func TestParseReportSampleErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"not key value", "sample:\n  time 12\n", "line 2: want KEY: VALUE"},
		{"bad time", "sample:\n  time: soon\n  symbol: f\n", `line 2: time "soon" is not a count`},
		{"negative count", "sample:\n  time: 1\n  event_count: -4\n", `line 3: event_count "-4" is not a count`},
		{"no symbol", "meta_info:\n  event_type: cpu-clock\nsample:\n  time: 5\n  event_count: 1\nlost_situation:\n", "line 3: a sample without a symbol"},
		{"unknown block", "sample:\n  symbol: f\nthread:\n  thread_id: 1\n", `line 3: unknown block "thread"`},
		{"outside a block", "  symbol: f\n", `line 1: "symbol: f" outside a block`},
		{"empty symbol", "sample:\n  symbol:\n", "line 2: an empty symbol"},
		{"truncated", reportSample[:strings.Index(reportSample, "  symbol: read")], "line 21: a sample without a symbol"},
		{"no samples", "meta_info:\n  event_type: cpu-clock\nlost_situation:\n  sample_count: 0\n  lost_count: 0\n", "no samples"},
		{"empty", "", "no samples"},
	} {
		_, err := adb.ParseReportSample(strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
