package sessions

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
)

func testHeader() Header {
	exp := &lab.Experiment{Device: "local", Trials: 2, Order: lab.OrderAlternate, Seed: 9, Alpha: 0.05, Confidence: 0.95,
		Builds: map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}}, lab.ArmTreatment: {Command: []string{"true"}}}}
	return NewHeader("perflab test", lab.DeviceInfo{ID: "local", Backend: "local"}, exp)
}

func trialEvent(i int, arm string, warm bool, status string, v float64) lab.Event {
	tr := &lab.Trial{Index: i, Round: i / 2, Arm: arm, Build: arm, Warmup: warm, Order: lab.OrderAlternate, Status: status, Duration: 0.01,
		Metrics: []lab.Metric{{Name: "wall_ms", Value: v, Unit: "ms", Better: "lower"}, {Name: "fps", Value: 60 - v, Better: "higher"}}}
	if status != lab.StatusOK {
		tr.Metrics, tr.Reason = []lab.Metric{}, "exit status 1"
	}
	return lab.Event{Type: lab.EventTrial, T: float64(i) * 0.1, Trial: tr}
}

func testEvents() []lab.Event {
	return []lab.Event{
		{Type: lab.EventSettings, T: 0, Settings: &lab.Settings{Order: lab.OrderAlternate}},
		trialEvent(0, lab.ArmControl, true, lab.StatusOK, 9),
		trialEvent(1, lab.ArmTreatment, true, lab.StatusOK, 9),
		trialEvent(2, lab.ArmControl, false, lab.StatusOK, 10),
		trialEvent(3, lab.ArmTreatment, false, lab.StatusFailed, 0),
		{Type: lab.EventNote, T: 0.35, Note: &lab.Note{Text: "a note, with \"quotes\""}},
		trialEvent(4, lab.ArmTreatment, false, lab.StatusOK, 12),
		trialEvent(5, lab.ArmControl, false, lab.StatusOK, 11),
		trialEvent(6, lab.ArmTreatment, false, lab.StatusOK, 13),
		{Type: lab.EventEnd, T: 0.7, End: &lab.End{Reason: "completed", Counts: map[string]int{"ok": 6, "failed": 1}}},
	}
}

func writeSession(t *testing.T, events []lab.Event) string {
	t.Helper()
	return writeSessionWith(t, testHeader(), events)
}

// writeSessionWith writes a session of h and events to a new file.
func writeSessionWith(t *testing.T, h Header, events []lab.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s", "session.jsonl")
	w, err := Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWriteLoadRoundTrip(t *testing.T) {
	evs := testEvents()
	path := writeSession(t, evs)
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) != 0 || len(s.Events) != len(evs) {
		t.Fatalf("loaded %d events, problems %v", len(s.Events), s.Problems)
	}
	if s.Header.Format != Format || s.Header.Version != Version || s.Header.Seed != 9 || s.Header.Plan.Trials != 2 || s.Header.ID == "" {
		t.Errorf("header %+v", s.Header)
	}
	a, _ := json.Marshal(evs)
	b, _ := json.Marshal(s.Events)
	if !bytes.Equal(a, b) {
		t.Errorf("events differ after the round trip:\n%s\n%s", a, b)
	}
	if s.End() == nil || s.End().Reason != "completed" {
		t.Errorf("end %+v", s.End())
	}
	c := CountTrials(s.Events)
	if c.Total != 7 || c.Warmup != 2 || c.ByStatus["failed"] != 1 || c.Counted[lab.ArmControl] != 2 || c.Counted[lab.ArmTreatment] != 2 {
		t.Errorf("counts %+v", c)
	}
	// A session is never overwritten by accident.
	if _, err := Create(path, testHeader()); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Create over an existing session: %v", err)
	}
	w, err := CreateOverwrite(path, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if s, _ := Load(path); len(s.Events) != 0 {
		t.Errorf("overwrite kept %d events", len(s.Events))
	}
}

func TestLoadSkipsCorruptLines(t *testing.T) {
	path := writeSession(t, testEvents())
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	// Line 5 (1-based) corrupt, line 8 has an unknown type, and the file
	// ends in a line cut short by a crash.
	lines[4] = `{"type":"trial","t":0.3,"trial":{"index":3,` + "\n"
	lines[7] = `{"type":"bogus","t":1}` + "\n"
	cut := lines[len(lines)-2]
	lines = append(lines[:len(lines)-2], cut[:len(cut)/2])
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)

	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) != 3 {
		t.Fatalf("problems %v", s.Problems)
	}
	check := func(p LineError, line int, want string) {
		t.Helper()
		if p.Line != line || !strings.Contains(p.Err, want) {
			t.Errorf("problem %+v, want line %d %q", p, line, want)
		}
	}
	check(s.Problems[0], 5, "corrupt line skipped")
	check(s.Problems[1], 8, `unknown event type "bogus"`)
	check(s.Problems[2], 11, "truncated last line")
	var idx []int
	for _, tr := range s.Trials() {
		idx = append(idx, tr.Index)
	}
	if fmt.Sprint(idx) != "[0 1 3 5 6]" {
		t.Errorf("trials %v loaded, want the intact ones [0 1 3 5 6]", idx)
	}
	if s.End() != nil {
		t.Error("the cut end event was loaded")
	}
}

func TestLoadRejectsNonSessions(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":   "",
		"garbage": "hello\n",
		"format":  `{"format":"other","version":1}` + "\n",
		"version": `{"format":"perflab-session","version":99}` + "\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMetricInputs(t *testing.T) {
	ins := MetricInputs(testEvents())
	if len(ins) != 2 || ins[0].Name != "wall_ms" || ins[1].Name != "fps" || ins[1].Better != "higher" {
		t.Fatalf("inputs %+v", ins)
	}
	if got := ins[0].Samples; len(got[0]) != 2 || got[0][0] != 10 || got[0][1] != 11 || len(got[1]) != 2 || got[1][0] != 12 || got[1][1] != 13 {
		t.Errorf("wall_ms samples %v (warm-ups and failures must be left out)", got)
	}
	if ins := MetricInputs(testEvents(), 5); len(ins[0].Samples[0]) != 1 || len(ins[0].Samples[1]) != 0 {
		t.Errorf("upTo 5: %v", ins[0].Samples)
	}
}

func TestReplayPaceAndCancel(t *testing.T) {
	evs := testEvents() // spans 0.7 s
	collect := func(speed float64) (n int, d time.Duration) {
		start := time.Now()
		for range Replay(context.Background(), evs, speed) {
			n++
		}
		return n, time.Since(start)
	}
	// Pacing never ends early (timers do not fire early), so the lower
	// bound is safe; the upper one only catches a hang.
	if n, d := collect(0); n != len(evs) || d > time.Minute {
		t.Errorf("max speed: %d events in %v", n, d)
	}
	if n, d := collect(2); n != len(evs) || d < 300*time.Millisecond {
		t.Errorf("speed 2: %d events in %v, want about 0.35 s", n, d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := Replay(ctx, evs, 0.01)
	<-ch
	cancel()
	for range ch {
	}
}

func TestExports(t *testing.T) {
	s, err := Load(writeSession(t, testEvents()))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, s); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 6 ok trials × 2 metrics + 1 failed trial row + header.
	if len(rows) != 14 || strings.Join(rows[0], ",") != strings.Join(CSVHeader, ",") {
		t.Fatalf("%d rows: %v", len(rows), rows[0])
	}
	failed := rows[7]
	if failed[3] != "treatment" || failed[8] != "failed" || failed[9] != "exit status 1" || failed[12] != "" {
		t.Errorf("failed trial row %v", failed)
	}

	buf.Reset()
	if err := WriteBenchstat(&buf, s); err != nil {
		t.Fatal(err)
	}
	want := "session: " + s.Header.ID + "\narm: control\nBenchmarkSession/device=local 1 10 wall_ms 50 fps\n" +
		"BenchmarkSession/device=local 1 11 wall_ms 49 fps\n" +
		"arm: treatment\nBenchmarkSession/device=local 1 12 wall_ms 48 fps\n" +
		"BenchmarkSession/device=local 1 13 wall_ms 47 fps\n"
	if buf.String() != want {
		t.Errorf("benchstat export:\n%s\nwant\n%s", buf.String(), want)
	}

	buf.Reset()
	if err := WriteJSON(&buf, s); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Header Header
		Events []lab.Event
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil || doc.Header.ID != s.Header.ID || len(doc.Events) != len(s.Events) {
		t.Errorf("JSON export: %v %+v", err, doc.Header)
	}
	sum := s.Summary()
	if sum.ID != s.Header.ID || len(sum.Notes) != 1 || sum.End == nil || sum.Counts.Total != 7 {
		t.Errorf("summary %+v", sum)
	}
}

// Read (a session from any reader, e.g. standard input) gives what Load
// gives from the file, and names no path.
func TestReadMatchesLoad(t *testing.T) {
	path := writeSession(t, testEvents())
	want, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != "" || len(got.Events) != len(want.Events) || got.Header.ID != want.Header.ID {
		t.Errorf("Read: path %q, %d events, id %s; Load: %d events, id %s", got.Path, len(got.Events), got.Header.ID, len(want.Events), want.Header.ID)
	}
	if _, err := Read(strings.NewReader("")); err == nil {
		t.Error("Read of nothing succeeded")
	}
}

// TestSessionFilesArePrivate: session files are 0600 and the folders
// perflab creates 0700; perflab's own session folder is narrowed when an
// earlier perflab left it open; a folder the user chose is left alone.
func TestSessionFilesArePrivate(t *testing.T) {
	root := t.TempDir()
	mode := func(p string) os.FileMode {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	create := func(path string, overwrite bool) {
		t.Helper()
		c := Create
		if overwrite {
			c = CreateOverwrite
		}
		w, err := c(path, testHeader())
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	// New folders and files.
	fresh := filepath.Join(root, "new", "deeper", "s.jsonl")
	create(fresh, false)
	if mode(fresh) != 0o600 || mode(filepath.Dir(fresh)) != 0o700 || mode(filepath.Join(root, "new")) != 0o700 {
		t.Errorf("modes %v %v %v, want 0600 0700 0700", mode(fresh), mode(filepath.Dir(fresh)), mode(filepath.Join(root, "new")))
	}
	// perflab's own folder as an earlier perflab left it, and an old file.
	own := filepath.Join(root, "data", "perflab", "sessions")
	os.MkdirAll(own, 0o755)
	os.Chmod(filepath.Dir(own), 0o755)
	os.Chmod(own, 0o755)
	above := mode(filepath.Join(root, "data"))
	old := filepath.Join(own, "old.jsonl")
	os.WriteFile(old, nil, 0o644)
	create(old, true)
	if mode(old) != 0o600 || mode(own) != 0o700 || mode(filepath.Dir(own)) != 0o700 {
		t.Errorf("modes %v %v %v, want 0600 0700 0700", mode(old), mode(own), mode(filepath.Dir(own)))
	}
	if mode(filepath.Join(root, "data")) != above {
		t.Errorf("the folder above perflab's went from %v to %v", above, mode(filepath.Join(root, "data")))
	}
	// A folder the user chose keeps its mode.
	mine := filepath.Join(root, "results")
	os.Mkdir(mine, 0o755)
	os.Chmod(mine, 0o755)
	create(filepath.Join(mine, "s.jsonl"), false)
	if mode(mine) != 0o755 || mode(filepath.Join(mine, "s.jsonl")) != 0o600 {
		t.Errorf("user folder %v, file %v; want 0755 (untouched), 0600", mode(mine), mode(filepath.Join(mine, "s.jsonl")))
	}
}

// TestCountTrialsMatchesAdd: CountTrials, which tallies statuses and arms
// in slots before its maps, counts as Counts.Add does trial by trial, with
// more distinct statuses and arms than it has slots.
func TestCountTrialsMatchesAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for round := range 20 {
		var evs []lab.Event
		kinds := 1 + round
		for range 500 {
			switch rng.IntN(10) {
			case 0:
				evs = append(evs, lab.Event{Type: lab.EventNote, Note: &lab.Note{Text: "n"}})
			case 1:
				evs = append(evs, lab.Event{Type: lab.EventTrial}) // no trial object
			default:
				st := []string{lab.StatusOK, lab.StatusFailed, lab.StatusTimeout}[rng.IntN(3)]
				if rng.IntN(4) == 0 {
					st = fmt.Sprintf("status%d", rng.IntN(kinds))
				}
				evs = append(evs, lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{
					Arm: fmt.Sprintf("arm%d", rng.IntN(kinds)), Status: st, Warmup: rng.IntN(5) == 0}})
			}
		}
		want := NewCounts("arm0", "x")
		for i := range evs {
			if evs[i].Type == lab.EventTrial && evs[i].Trial != nil {
				want.Add(evs[i].Trial)
			}
		}
		if got := CountTrials(evs, "arm0", "x"); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d kinds: CountTrials %+v, want %+v", kinds, got, want)
		}
	}
}
