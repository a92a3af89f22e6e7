package sessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// sessionText is a header line and one line per event, as Writer writes them.
func sessionText(t testing.TB, events []lab.Event) []string {
	t.Helper()
	h, err := json.Marshal(testHeader())
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{string(h)}
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	return lines
}

func joinLines(lines []string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

func trialIndices(s *Session) string {
	var idx []int
	for _, tr := range s.Trials() {
		idx = append(idx, tr.Index)
	}
	return fmt.Sprint(idx)
}

// TestReadIntegrity: what the reader refuses to count, and how it says so.
// testEvents' lines: 1 header, 2 settings, 3-6 trials 0-3, 7 note, 8-10
// trials 4-6, 11 end.
func TestReadIntegrity(t *testing.T) {
	base := sessionText(t, testEvents())
	edit := func(f func(lines []string) []string) []byte {
		return joinLines(f(append([]string(nil), base...)))
	}
	trialLine := func(i int, arm, status string, ms ...lab.Metric) string {
		e := trialEvent(i, arm, false, status, 1)
		if ms != nil {
			e.Trial.Metrics = ms
		}
		b, _ := json.Marshal(e)
		return string(b)
	}
	tests := []struct {
		name     string
		data     []byte
		err      string   // a Read error containing this, or "" for none
		problems []string // "LINE: substring", in order
		trials   string   // trial indices kept
		counted  [2]int   // counted trials per arm
	}{
		{name: "intact", data: joinLines(base), trials: "[0 1 2 3 4 5 6]", counted: [2]int{2, 2}},
		{
			name: "identical duplicate counted once",
			data: edit(func(l []string) []string { return append(l[:9], append([]string{l[4]}, l[9:]...)...) }),
			// line 10 repeats line 5 (trial 2); trials 5 and 6 move to lines 11 and 12.
			problems: []string{"10: duplicate of line 5 (trial index 2) skipped: counted once"},
			trials:   "[0 1 2 3 4 5 6]", counted: [2]int{2, 2},
		},
		{
			name: "conflicting duplicate",
			data: edit(func(l []string) []string {
				return append(l, trialLine(2, lab.ArmControl, lab.StatusOK))
			}),
			err: "line 12: trial index 2 is also on line 5 with different content",
		},
		{
			name: "out of order kept",
			data: edit(func(l []string) []string {
				l[7], l[9] = l[9], l[7] // trials 4 and 6 swap lines
				return l
			}),
			problems: []string{"9: trial index 5 out of order (after index 6 on line 8)", "10: trial index 4 out of order (after index 6 on line 8)"},
			trials:   "[0 1 2 3 6 5 4]", counted: [2]int{2, 2},
		},
		{
			name: "unknown arm and status",
			data: edit(func(l []string) []string {
				return append(l, trialLine(7, "Treatment", lab.StatusOK), trialLine(8, lab.ArmControl, "OK"))
			}),
			problems: []string{`12: invalid event skipped: trial 7 has unknown arm "Treatment"`, `13: invalid event skipped: trial 8 has unknown status "OK"`},
			trials:   "[0 1 2 3 4 5 6]", counted: [2]int{2, 2},
		},
		{
			name: "pool events kept, bad ones named by line",
			data: edit(func(l []string) []string {
				return append(l,
					`{"type":"start","t":9,"start":{"device":"sim:pixel#2","round":4,"arm":"control"}}`,
					`{"type":"device","t":9,"device":{"device":"sim:pixel#2","state":"offline","reason":"adb: device offline"}}`,
					`{"type":"device","t":9,"device":{"device":"sim:pixel#2","state":"gone"}}`,
					`{"type":"device","t":9}`,
					`{"type":"start","t":9,"start":{"device":"sim:pixel#2","round":4,"arm":"B"}}`,
					`{"type":"start","t":9,"start":{"round":4,"arm":"control"}}`)
			}),
			problems: []string{
				`14: invalid event skipped: device event for sim:pixel#2 has unknown state "gone"`,
				`15: invalid event skipped: device event without its "device" object`,
				`16: invalid event skipped: start event on sim:pixel#2 has unknown arm "B"`,
				`17: invalid event skipped: start event without its "device" ID`,
			},
			trials: "[0 1 2 3 4 5 6]", counted: [2]int{2, 2},
		},
		{
			name: "unit change left out",
			data: edit(func(l []string) []string {
				return append(l, trialLine(7, lab.ArmControl, lab.StatusOK,
					lab.Metric{Name: "wall_ms", Value: 0.012, Unit: "s"}, lab.Metric{Name: "fps", Value: 50, Better: "higher"}))
			}),
			// Trial 7 counts for fps, not for wall_ms.
			problems: []string{`12: metric "wall_ms" in "s" left out: its unit is "ms" (line 3)`},
			trials:   "[0 1 2 3 4 5 6 7]", counted: [2]int{2, 2},
		},
		{
			name: "second header",
			data: append(joinLines(base), joinLines(base)...),
			err:  "line 12: a second session header",
		},
		{
			name:     "truncated last line stays a warning",
			data:     []byte(strings.Join(base, "\n") + "\n" + base[3][:20]),
			problems: []string{"12: truncated last line skipped"},
			trials:   "[0 1 2 3 4 5 6]", counted: [2]int{2, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, fast := range []bool{true, false} {
				s, err := parse(tt.data, fast, false)
				if tt.err != "" {
					if err == nil || !strings.Contains(err.Error(), tt.err) {
						t.Fatalf("fast=%v: error %v, want %q", fast, err, tt.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("fast=%v: %v", fast, err)
				}
				if len(s.Problems) != len(tt.problems) {
					t.Fatalf("fast=%v: problems %v, want %q", fast, s.Problems, tt.problems)
				}
				for i, want := range tt.problems {
					if got := fmt.Sprintf("%d: %s", s.Problems[i].Line, s.Problems[i].Err); !strings.HasPrefix(got, want) {
						t.Errorf("fast=%v: problem %q, want %q…", fast, got, want)
					}
				}
				if got := trialIndices(s); got != tt.trials {
					t.Errorf("fast=%v: trials %s, want %s", fast, got, tt.trials)
				}
				ins := MetricInputs(s.Events)
				if got := [2]int{len(ins[0].Samples[0]), len(ins[0].Samples[1])}; ins[0].Name != "wall_ms" || got != tt.counted {
					t.Errorf("fast=%v: %s samples per arm %v, want %v", fast, ins[0].Name, got, tt.counted)
				}
				for _, in := range ins {
					if in.Name == "wall_ms" && in.Unit != "ms" {
						t.Errorf("wall_ms unit %q", in.Unit)
					}
				}
			}
		})
	}
}

// TestUnitChangeProblemsBounded: a metric that changes unit on every
// treatment line lists a few lines and sums up the rest.
func TestUnitChangeProblemsBounded(t *testing.T) {
	var evs []lab.Event
	for i := range 40 {
		arm := lab.ArmControl
		unit := "ms"
		if i%2 == 1 {
			arm, unit = lab.ArmTreatment, "s"
		}
		evs = append(evs, lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Index: i, Arm: arm, Status: lab.StatusOK,
			Metrics: []lab.Metric{{Name: "x", Value: 1, Unit: unit}}}})
	}
	s, err := parse(joinLines(sessionText(t, evs)), true, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) != maxListedUnitChanges+1 {
		t.Fatalf("%d problems: %v", len(s.Problems), s.Problems)
	}
	last := s.Problems[len(s.Problems)-1]
	if last.Line != 41 || !strings.Contains(last.Err, `15 more values in another unit than "ms" (line 2) left out, the last one in "s"`) {
		t.Errorf("summary %v", last)
	}
	ins := MetricInputs(s.Events)
	if len(ins) != 1 || len(ins[0].Samples[0]) != 20 || len(ins[0].Samples[1]) != 0 {
		t.Errorf("inputs %+v: the values in s must not be pooled with those in ms", ins)
	}
}

// TestLoadConcatenated is the case of the issue: two sessions joined with
// cat are one clear error naming the line, not one vague skip.
func TestLoadConcatenated(t *testing.T) {
	a, _ := os.ReadFile(writeSession(t, testEvents()))
	b, _ := os.ReadFile(writeSession(t, testEvents()))
	path := filepath.Join(t.TempDir(), "ab.jsonl")
	os.WriteFile(path, append(a, b...), 0o600)
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+": line 12: a second session header") || !strings.Contains(err.Error(), "concatenated") {
		t.Errorf("Load of two sessions: %v", err)
	}
}

// checkReaders parses data with the fast decoder and with encoding/json
// alone and fails unless both give the same session or the same error.
func checkReaders(t *testing.T, data []byte) {
	fast, ferr := parse(data, true, false)
	slow, serr := parse(data, false, false)
	if (ferr == nil) != (serr == nil) || (ferr != nil && ferr.Error() != serr.Error()) {
		t.Fatalf("errors differ: fast %v, encoding/json %v", ferr, serr)
	}
	if ferr != nil {
		return
	}
	if !reflect.DeepEqual(fast.Problems, slow.Problems) {
		t.Fatalf("problems differ:\nfast %v\njson %v", fast.Problems, slow.Problems)
	}
	if !reflect.DeepEqual(fast.Events, slow.Events) {
		a, _ := json.Marshal(fast.Events)
		b, _ := json.Marshal(slow.Events)
		t.Fatalf("events differ:\nfast %s\njson %s", a, b)
	}
}

// FuzzRead: the reader gives the same session, problems and errors with the
// fast decoder as with encoding/json alone, whatever the file holds.
func FuzzRead(f *testing.F) {
	base := sessionText(f, testEvents())
	f.Add(joinLines(base))
	f.Add(append(joinLines(base), joinLines(base)...))
	f.Add(joinLines(append(base, base[4], base[3])))
	for _, s := range fastSamples {
		f.Add(joinLines([]string{base[0], s, base[2]}))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkReaders(t, data) })
}

// TestReadersAgreeOnBigSession runs the comparison on a session large
// enough for several decoding workers.
func TestReadersAgreeOnBigSession(t *testing.T) {
	lines := sessionText(t, bigEvents(9000))
	lines[4000] = lines[100]                                     // identical duplicate
	lines[6000] = strings.Replace(lines[6000], `"ms"`, `"s"`, 1) // unit change
	lines[7000] = lines[7000][:30]                               // corrupt
	var buf bytes.Buffer
	buf.Write(joinLines(lines))
	if buf.Len() < 2<<20 {
		t.Fatalf("%d bytes: too small for two workers", buf.Len())
	}
	checkReaders(t, buf.Bytes())
	// Line numbers are right across the workers' ranges.
	s, err := parse(buf.Bytes(), true, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range s.Problems {
		got = append(got, fmt.Sprintf("%d: %.40s", p.Line, p.Err))
	}
	want := []string{"4001: duplicate of line 101 (trial index 99) s", `6001: metric "wall_ms" in "s" left out: its un`, "7001: corrupt line skipped: unexpected end of "}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(s.Trials()) != 8998 {
		t.Errorf("problems %q, %d trials; want %q, 8998", got, len(s.Trials()), want)
	}
}

// BenchmarkCheckTrials100k is the integrity pass alone over 100,000
// trials, to compare with BenchmarkLoad100k (which includes it).
func BenchmarkCheckTrials100k(b *testing.B) {
	events := bigEvents(100_000)
	lineOf := make([]int32, len(events))
	lines := &lineIndex{}
	for i := range lineOf {
		lineOf[i] = int32(i + 2)
	}
	for b.Loop() {
		if evs, probs, err := checkTrials(events, lineOf, lines); err != nil || len(probs) != 0 || len(evs) != len(events) {
			b.Fatal(err, probs)
		}
	}
}
