package local

import (
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestParsePerfScript: samples with their times and stacks, leaf first;
// unwinder ends dropped, unknown frames kept as addresses with a note; a
// malformed header is an error naming the line.
func TestParsePerfScript(t *testing.T) {
	in := " 0.000000000: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1209000) @ 0xffffffff81000000]: x [kernel.kallsyms]_text\n" +
		" 10.000000000: PERF_RECORD_MMAP2 15687/15687: [0x5565d285b000(0xf000) @ 0x3000 fe:00 247273 0]: r-xp /nonexistent/gzip\n" +
		" 10.000000100: \n\t 1152 work_a (/nonexistent/gzip)\n\t 2724a __libc_start_call_main+0x7a (/usr/lib/libc.so.6)\n\n" +
		" 10.000250100: \n\t cc5c [unknown] (/nonexistent/gzip)\n\t 7751333150573358 [unknown] ([unknown])\n\t 0 [unknown] ([unknown])\n\n"
	p, err := parsePerfScript(strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 2 || p.Samples[0].TimeNs != 10_000_000_100 || strings.Join(p.Samples[0].Stack, ",") != "work_a,__libc_start_call_main" ||
		strings.Join(p.Samples[1].Stack, ",") != "gzip+0xcc5c" || len(p.Notes) != 2 || p.PeriodNs != 250_000 {
		t.Errorf("%+v", p)
	}
	// The binary's frames keep their process address and mapping; a
	// mapping no frame is in (the kernel's, here) is left out.
	if len(p.Mappings) != 1 || p.Mappings[0] != (lab.Mapping{Start: 0x5565d285b000, Limit: 0x5565d285b000 + 0xf000, Offset: 0x3000, File: "/nonexistent/gzip"}) ||
		p.Samples[1].Frames[0] != (lab.Frame{Addr: 0x5565d285b000 + 0xcc5c - 0x3000, Mapping: 1}) || p.Samples[0].Frames[1].Mapping != 0 {
		t.Errorf("mappings %+v frames %+v %+v", p.Mappings, p.Samples[0].Frames, p.Samples[1].Frames)
	}
	if _, err := parsePerfScript(strings.NewReader("garbage\n"), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("malformed: %v", err)
	}
	if _, err := parsePerfScript(strings.NewReader(""), nil); err == nil {
		t.Error("no samples: no error")
	}
}

// TestSpanLines: PERFLAB_SPAN lines on stdout become the trial's spans;
// a span never ended is kept open for Label to close; a malformed one is
// an error naming its line.
func TestSpanLines(t *testing.T) {
	c := &lineCollector{}
	c.Write([]byte("hello\nPERFLAB_SPAN begin load 100\nPERFLAB_METRIC items=3\nPERFLAB_SPAN end load 250\nPERFLAB_SPAN begin draw 300\n"))
	c.flush()
	if c.err != nil || len(c.metrics) != 1 || len(c.spans) != 2 ||
		c.spans[0] != (lab.Span{Name: "load", StartNs: 100, EndNs: 250}) || c.spans[1] != (lab.Span{Name: "draw", StartNs: 300}) {
		t.Errorf("metrics %v spans %v err %v", c.metrics, c.spans, c.err)
	}
	c = &lineCollector{}
	c.Write([]byte("PERFLAB_SPAN begin load soon\n"))
	if c.err == nil || !strings.Contains(c.err.Error(), "line 1") {
		t.Errorf("malformed span: %v", c.err)
	}
}
