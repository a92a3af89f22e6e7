package sessions

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
)

// Summary describes a session for reports: who, where, what was planned
// and how many trials ended how.
type Summary struct {
	ID       string         `json:"id"`
	Path     string         `json:"path,omitempty"`
	Created  time.Time      `json:"created"`
	Tool     string         `json:"tool"`
	Seed     int64          `json:"seed"`
	Device   lab.DeviceInfo `json:"device"`
	Plan     lab.Experiment `json:"plan"`
	Counts   Counts         `json:"counts"`
	End      *lab.End       `json:"end"` // null when the run never finished (killed)
	Notes    []string       `json:"notes,omitempty"`
	Problems []LineError    `json:"problems,omitempty"`
}

// Summary returns the session's summary.
func (s *Session) Summary() Summary {
	sum := Summary{
		ID: s.Header.ID, Path: s.Path, Created: s.Header.Created, Tool: s.Header.Tool, Seed: s.Header.Seed,
		Device: s.Header.Device, Plan: s.Header.Plan, Counts: CountTrials(s.Events, s.Header.Plan.ArmKeys()...), End: s.End(),
		Problems: s.Problems,
	}
	for _, e := range s.Events {
		if e.Type == lab.EventNote && e.Note != nil {
			sum.Notes = append(sum.Notes, e.Note.Text)
		}
	}
	return sum
}

// WriteJSON writes the whole session as one JSON document:
// {"header":{...},"events":[...],"problems":[...]}.
func WriteJSON(w io.Writer, s *Session) error {
	doc := struct {
		Header   Header      `json:"header"`
		Events   []lab.Event `json:"events"`
		Problems []LineError `json:"problems"`
	}{s.Header, s.Events, s.Problems}
	if doc.Events == nil {
		doc.Events = []lab.Event{}
	}
	if doc.Problems == nil {
		doc.Problems = []LineError{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// CSVHeader is the first row of WriteCSV's output.
var CSVHeader = []string{"session", "index", "round", "arm", "build", "warmup", "counted", "order", "status", "reason", "t", "duration_s", "metric", "value", "unit", "better"}

// WriteCSV writes one row per trial and metric. A trial without metrics (a
// failed one) gets one row with the metric columns empty, so every trial
// appears.
func WriteCSV(w io.Writer, s *Session) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	row := make([]string, len(CSVHeader))
	for _, e := range s.Events {
		t := e.Trial
		if e.Type != lab.EventTrial || t == nil {
			continue
		}
		row = append(row[:0], s.Header.ID, strconv.Itoa(t.Index), strconv.Itoa(t.Round), t.Arm, t.Build,
			strconv.FormatBool(t.Warmup), strconv.FormatBool(t.Counted()), t.Order, t.Status, t.Reason,
			fmtFloat(e.T), fmtFloat(t.Duration))
		if len(t.Metrics) == 0 {
			if err := cw.Write(append(row, "", "", "", "")); err != nil {
				return err
			}
			continue
		}
		n := len(row)
		for _, m := range t.Metrics {
			if err := cw.Write(append(row[:n], m.Name, fmtFloat(m.Value), m.Unit, m.Better)); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteBenchstat writes the counted trials in the Go benchmark format that
// golang.org/x/perf/cmd/benchstat reads: an "arm: control" configuration
// line, every control trial, then "arm: treatment" and every treatment
// trial (with more builds, every arm in the plan's order, the base first;
// any other arm follows, in name order), one line per trial with
// each metric as a value and its name as the unit. benchstat takes the
// first value of a column key it meets as the base, so writing control
// first makes `benchstat -col arm FILE` compare treatment against control
// whatever order the trials ran in (the order is in the session, not here).
func WriteBenchstat(w io.Writer, s *Session) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	name := "BenchmarkSession"
	if s.Header.Plan.Device != "" {
		name += "/device=" + benchToken(s.Header.Plan.Device)
	}
	bw.WriteString("session: " + benchToken(s.Header.ID) + "\n")
	var line []byte
	for _, arm := range benchArms(s) {
		bw.WriteString("arm: " + benchToken(arm) + "\n")
		for _, e := range s.Events {
			t := e.Trial
			if e.Type != lab.EventTrial || t == nil || t.Arm != arm || !t.Counted() || len(t.Metrics) == 0 {
				continue
			}
			if s.Header.Plan.Suite != nil {
				line = appendSuiteBench(line[:0], t.Metrics)
				bw.Write(line)
				continue
			}
			line = append(line[:0], name...)
			line = append(line, " 1"...)
			for _, m := range t.Metrics {
				line = append(line, ' ')
				line = strconv.AppendFloat(line, m.Value, 'g', -1, 64)
				line = append(line, ' ')
				line = append(line, benchToken(m.Name)...)
			}
			line = append(line, '\n')
			bw.Write(line)
		}
	}
	return bw.Flush()
}

// appendSuiteBench appends a suite trial's metrics as the benchmark lines
// go test printed: one line per benchmark (its name before ":UNIT"), each
// value with its unit, so that benchstat -col arm compares benchmarks.
func appendSuiteBench(line []byte, ms []lab.Metric) []byte {
	var order []string
	vals := map[string][]lab.Metric{}
	for _, m := range ms {
		b, _, _ := strings.Cut(m.Name, ":")
		if _, ok := vals[b]; !ok {
			order = append(order, b)
		}
		vals[b] = append(vals[b], m)
	}
	for _, b := range order {
		line = append(line, "Benchmark"...)
		line = append(line, benchToken(b)...)
		line = append(line, " 1"...)
		for _, m := range vals[b] {
			line = append(line, ' ')
			line = strconv.AppendFloat(line, m.Value, 'g', -1, 64)
			line = append(line, ' ')
			line = append(line, benchToken(m.Unit)...)
		}
		line = append(line, '\n')
	}
	return line
}

// benchArms lists the arms with counted trials in the plan's base order
// (control, treatment for an A/B), then any others sorted.
func benchArms(s *Session) []string {
	have := map[string]bool{}
	for _, e := range s.Events {
		if t := e.Trial; e.Type == lab.EventTrial && t != nil && t.Counted() && len(t.Metrics) > 0 {
			have[t.Arm] = true
		}
	}
	var arms []string
	for _, a := range s.Header.Plan.ArmKeys() {
		if have[a] {
			arms = append(arms, a)
			delete(have, a)
		}
	}
	rest := make([]string, 0, len(have))
	for a := range have {
		rest = append(rest, a)
	}
	sort.Strings(rest)
	return append(arms, rest...)
}

// benchToken makes s safe as one token of the benchmark format.
func benchToken(s string) string {
	if !strings.ContainsAny(s, " \t\n") {
		return s
	}
	return strings.Join(strings.Fields(s), "_")
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
