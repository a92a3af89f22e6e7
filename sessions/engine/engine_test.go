package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// fakeDevice runs trials instantly with a deterministic metric: control
// 100 + index, treatment 110 + index.
type fakeDevice struct {
	mu     sync.Mutex
	closed bool
	delay  time.Duration // per trial
}

func (d *fakeDevice) Info() lab.DeviceInfo {
	return lab.DeviceInfo{ID: "fake", Backend: "test", Model: "Fake"}
}
func (d *fakeDevice) Setup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	return nil, nil
}
func (d *fakeDevice) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	time.Sleep(d.delay)
	v := 100 + float64(req.Index)
	if req.Arm == lab.ArmTreatment {
		v += 10
	}
	return lab.TrialResult{Status: lab.StatusOK, Metrics: []lab.Metric{{Name: "wall_ms", Unit: "ms", Value: v}}}
}
func (d *fakeDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

// probingFake also runs the stability probe: five samples.
type probingFake struct{ fakeDevice }

func (d *probingFake) Probe(ctx context.Context, o lab.ProbeOptions, out chan<- lab.ProbeSample) error {
	for i := range 5 {
		select {
		case out <- lab.ProbeSample{T: float64(i + 1), MFLOPS: 1000}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func testPlan(trials int) lab.Experiment {
	return lab.Experiment{
		Device: "fake",
		Builds: map[string]lab.Build{
			lab.ArmControl:   {Name: "a", Command: []string{"true"}},
			lab.ArmTreatment: {Name: "b", Command: []string{"true"}},
		},
		Trials: trials, Warmup: 1, Order: lab.OrderAlternate, Seed: 3,
	}
}

func fakeLab(dev lab.Device) Lab {
	return Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) { return dev, nil }}
}

// drain reads a session's stream to the end.
func drain(t *testing.T, s *Session) ([]lab.Event, []error) {
	t.Helper()
	var evs []lab.Event
	var errs []error
	done := time.After(60 * time.Second) // only guards against a hang
	for {
		select {
		case it, ok := <-s.Events:
			if !ok {
				return evs, errs
			}
			if it.Err != nil {
				errs = append(errs, it.Err)
			}
			if it.Event.Type != "" {
				evs = append(evs, it.Event)
			}
		case <-done:
			t.Fatal("session stream did not end")
		}
	}
}

// TestStartWritesEverythingItRelays: the header always records source and
// host; every relayed event is in the file, in the same order; the device
// is closed; Written counts the trials on disk.
func TestStartWritesEverythingItRelays(t *testing.T) {
	for _, source := range []string{"exp.json", "workbench"} {
		dev := &fakeDevice{}
		path := filepath.Join(t.TempDir(), "s.jsonl")
		s, err := Start(t.Context(), fakeLab(dev), Plan{Experiment: testPlan(4), Tool: "perflab test", Source: source, Path: path})
		if err != nil {
			t.Fatal(err)
		}
		evs, errs := drain(t, s)
		res := s.Wait()
		if len(errs) != 0 || res.Err != nil || EndErr(res.End) != nil {
			t.Fatalf("errors %v, result %+v", errs, res)
		}
		got, err := sessions.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		host, _ := os.Hostname()
		if got.Header.Source != source || got.Header.Host != host || got.Header.Host == "" || got.Header.Tool != "perflab test" {
			t.Errorf("header source %q host %q tool %q", got.Header.Source, got.Header.Host, got.Header.Tool)
		}
		if len(got.Events) != len(evs) {
			t.Fatalf("file has %d events, relayed %d", len(got.Events), len(evs))
		}
		for i := range evs {
			if got.Events[i].Type != evs[i].Type || got.Events[i].T != evs[i].T {
				t.Fatalf("event %d: file %s at %v, relayed %s at %v", i, got.Events[i].Type, got.Events[i].T, evs[i].Type, evs[i].T)
			}
		}
		if want := sessions.CountTrials(got.Events); res.Written.Total != want.Total || res.Written.Total != 10 {
			t.Errorf("written %d trials, file has %d (want 10)", res.Written.Total, want.Total)
		}
		if !dev.closed {
			t.Error("device not closed")
		}
	}
}

// failingWriter accepts n trial lines, then fails every write (a full disk).
type failingWriter struct {
	n       int
	written []lab.Event
}

func (w *failingWriter) Write(ev lab.Event) error {
	if ev.Type == lab.EventTrial {
		if w.n == 0 {
			return errors.New("write /x: no space left on device")
		}
		w.n--
	}
	w.written = append(w.written, ev)
	return nil
}
func (w *failingWriter) Close() error { return nil }

// TestWriteErrorStopsTheRunAndCountsWhatIsOnDisk: issue 12 item 10. After
// the first failed write the run stops, and Written counts only the trials
// the writer accepted.
func TestWriteErrorStopsTheRunAndCountsWhatIsOnDisk(t *testing.T) {
	w := &failingWriter{n: 5}
	// Trials take a millisecond, so the runner is mid-run when writes fail.
	l := fakeLab(&fakeDevice{delay: time.Millisecond})
	l.Create = func(string, sessions.Header, bool) (Writer, error) { return w, nil }
	s, err := Start(t.Context(), l, Plan{Experiment: testPlan(100000), Path: filepath.Join(t.TempDir(), "s.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	_, errs := drain(t, s)
	res := s.Wait()
	if res.Err == nil || len(errs) == 0 || !strings.Contains(res.Err.Error(), "no space left") {
		t.Fatalf("write error not reported: %v / %v", res.Err, errs)
	}
	if len(errs) != 1 {
		t.Errorf("%d items carry an error, want only the event whose write failed: %v", len(errs), errs)
	}
	if res.Written.Total != 5 || sessions.CountTrials(w.written).Total != 5 {
		t.Errorf("written %d trials, writer holds %d; want 5", res.Written.Total, sessions.CountTrials(w.written).Total)
	}
	if !errors.Is(EndErr(res.End), context.Canceled) {
		t.Errorf("run not stopped after the write error: end %+v", res.End)
	}
}

// TestProbeRunsBeforeTheFirstTrial: with ProbeS the stability check's
// samples are recorded after setup and before any trial; a device that
// cannot probe gets a note instead.
func TestProbeRunsBeforeTheFirstTrial(t *testing.T) {
	check := func(dev lab.Device, wantProbes int, wantNote string) {
		t.Helper()
		s, err := Start(t.Context(), fakeLab(dev), Plan{Experiment: testPlan(2), ProbeS: 5, Path: filepath.Join(t.TempDir(), "s.jsonl")})
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := drain(t, s)
		probes, trialSeen, note := 0, false, ""
		for _, e := range evs {
			switch e.Type {
			case lab.EventProbe:
				if trialSeen {
					t.Error("probe sample after a trial")
				}
				probes++
			case lab.EventTrial:
				trialSeen = true
			case lab.EventNote:
				note += e.Note.Text
			}
		}
		if probes != wantProbes || !strings.Contains(note, wantNote) {
			t.Errorf("%d probe samples (want %d), notes %q (want %q)", probes, wantProbes, note, wantNote)
		}
	}
	check(&probingFake{}, 5, "")
	check(&fakeDevice{}, 0, "stability check skipped")
}

// TestSessionPath: one place decides where a session goes.
func TestSessionPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	d, err := DefaultDir()
	if err != nil || d != filepath.Join(dir, "perflab", "sessions") {
		t.Errorf("DefaultDir with absolute XDG_DATA_HOME = %q, %v", d, err)
	}
	// The XDG spec says relative values are ignored.
	t.Setenv("XDG_DATA_HOME", "relative/dir")
	t.Setenv("HOME", dir)
	if d, _ := DefaultDir(); d != filepath.Join(dir, ".local", "share", "perflab", "sessions") {
		t.Errorf("DefaultDir with relative XDG_DATA_HOME = %q", d)
	}
	t.Chdir(dir)
	if p, _ := sessionPath(Plan{Path: "s.jsonl"}, "id"); p != filepath.Join(dir, "s.jsonl") {
		t.Errorf("relative path not made absolute: %q", p)
	}
	if p, _ := sessionPath(Plan{Dir: "sub"}, "ID"); p != filepath.Join(dir, "sub", "ID.jsonl") {
		t.Errorf("default name: %q", p)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if p, _ := sessionPath(Plan{Path: "s.jsonl", FreeName: true}, "id"); p != filepath.Join(dir, "s-2.jsonl") {
		t.Errorf("FreeName: %q", p)
	}
	// An existing file is an error unless asked to overwrite.
	if _, err := Start(t.Context(), fakeLab(&fakeDevice{}), Plan{Experiment: testPlan(1), Path: "s.jsonl"}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing session file: %v", err)
	}
}

func TestEndErr(t *testing.T) {
	for _, tt := range []struct {
		end  *lab.End
		want string
	}{
		{&lab.End{Reason: "completed"}, ""},
		{&lab.End{Reason: "cancelled"}, context.Canceled.Error()},
		{&lab.End{Reason: "failed", Error: "setup: boom"}, "failed: setup: boom"},
		{nil, "without an end event"},
	} {
		err := EndErr(tt.end)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("EndErr(%+v) = %v, want %q", tt.end, err, tt.want)
		}
	}
}

// TestCancelEndsWithAnEndEvent: Cancel stops the run, and the session still
// ends with its end event on disk.
func TestCancelEndsWithAnEndEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	s, err := Start(t.Context(), fakeLab(&fakeDevice{}), Plan{Experiment: testPlan(1 << 20), Path: path})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it := range s.Events {
		if it.Event.Type == lab.EventTrial {
			if n++; n == 3 {
				s.Cancel()
			}
		}
	}
	res := s.Wait()
	got, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if end := got.End(); end == nil || end.Reason != "cancelled" || !errors.Is(EndErr(res.End), context.Canceled) {
		t.Errorf("end on disk %+v, result end %+v", end, res.End)
	}
	if res.Written.Total != sessions.CountTrials(got.Events).Total {
		t.Errorf("written %d, file has %d", res.Written.Total, sessions.CountTrials(got.Events).Total)
	}
}

// slowWriter takes a few milliseconds per trial line, as a disk under load
// may, and counts the trial lines written.
type slowWriter struct{ trials atomic.Int64 }

func (w *slowWriter) Write(ev lab.Event) error {
	if ev.Type == lab.EventTrial {
		time.Sleep(3 * time.Millisecond)
		w.trials.Add(1)
	}
	return nil
}
func (w *slowWriter) Close() error { return nil }

// gateCheckingDevice records each trial that starts before every trial
// before it is written.
type gateCheckingDevice struct {
	fakeDevice
	w     *slowWriter
	early atomic.Int64
}

func (d *gateCheckingDevice) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	if d.w.trials.Load() != int64(req.Index) {
		d.early.Add(1)
	}
	return d.fakeDevice.RunTrial(ctx, req)
}

// TestTrialWaitsForTheTrialsBeforeItOnDisk: kill -9 loses at most the
// trial in flight, however slow the writes, as no trial starts before the
// ones before it are written.
func TestTrialWaitsForTheTrialsBeforeItOnDisk(t *testing.T) {
	w := &slowWriter{}
	dev := &gateCheckingDevice{w: w}
	l := fakeLab(dev)
	l.Create = func(string, sessions.Header, bool) (Writer, error) { return w, nil }
	s, err := Start(t.Context(), l, Plan{Experiment: testPlan(20), Path: filepath.Join(t.TempDir(), "s.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	if res := s.Wait(); res.Written.Total != 42 || w.trials.Load() != 42 {
		t.Fatalf("written %d trials, writer has %d; want 42", res.Written.Total, w.trials.Load())
	}
	if n := dev.early.Load(); n != 0 {
		t.Errorf("%d trials started before the trials before them were written", n)
	}
}

// reportingGateDevice is gateCheckingDevice on a device that reports its
// trials' start (lab.TrialStartReporter), whose trial events the runner
// hands on late: they must still be on disk first.
type reportingGateDevice struct{ gateCheckingDevice }

func (d *reportingGateDevice) ReportsTrialStart() bool { return true }
func (d *reportingGateDevice) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	req.TrialUnderWay()
	return d.gateCheckingDevice.RunTrial(ctx, req)
}

// TestTrialWaitsForTheTrialsBeforeItOnDiskWhenHandedOnLate: as above, for
// a device whose trial events reach the views only once the next trial
// is under way; every event still reaches them, in order.
func TestTrialWaitsForTheTrialsBeforeItOnDiskWhenHandedOnLate(t *testing.T) {
	w := &slowWriter{}
	dev := &reportingGateDevice{gateCheckingDevice{w: w}}
	l := fakeLab(dev)
	l.Create = func(string, sessions.Header, bool) (Writer, error) { return w, nil }
	s, err := Start(t.Context(), l, Plan{Experiment: testPlan(20), Path: filepath.Join(t.TempDir(), "s.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := drain(t, s)
	if res := s.Wait(); res.Written.Total != 42 || w.trials.Load() != 42 {
		t.Fatalf("written %d trials, writer has %d; want 42", res.Written.Total, w.trials.Load())
	}
	if n := dev.early.Load(); n != 0 {
		t.Errorf("%d trials started before the trials before them were written", n)
	}
	var idx []int
	for _, ev := range evs {
		if ev.Type == lab.EventTrial {
			idx = append(idx, ev.Trial.Index)
		}
	}
	for i, k := range idx {
		if k != i {
			t.Fatalf("trial events reached the views as %v, want 0..41 in order", idx)
		}
	}
	if len(idx) != 42 || evs[len(evs)-1].Type != lab.EventEnd {
		t.Errorf("views got %d trials, last event %q; want 42 and the end", len(idx), evs[len(evs)-1].Type)
	}
}

// poolWriter counts each device's trial lines, slowly.
type poolWriter struct {
	mu     sync.Mutex
	trials map[string]int
}

func (w *poolWriter) Write(ev lab.Event) error {
	if ev.Type == lab.EventTrial {
		time.Sleep(2 * time.Millisecond)
		w.mu.Lock()
		w.trials[ev.Trial.Device]++
		w.mu.Unlock()
	}
	return nil
}
func (w *poolWriter) Close() error { return nil }

// poolGateDevice records each trial that starts before the device's own
// earlier trials are written.
type poolGateDevice struct {
	fakeDevice
	id       string
	w        *poolWriter
	returned atomic.Int64
	early    atomic.Int64
}

func (d *poolGateDevice) Info() lab.DeviceInfo {
	return lab.DeviceInfo{ID: d.id, Backend: "test", Model: "Fake"}
}
func (d *poolGateDevice) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.w.mu.Lock()
	n := d.w.trials[d.id]
	d.w.mu.Unlock()
	if int64(n) != d.returned.Load() {
		d.early.Add(1)
	}
	res := d.fakeDevice.RunTrial(ctx, req)
	d.returned.Add(1)
	return res
}

// TestPoolTrialWaitsForItsDevicesTrialsOnDisk: in a pool each device's
// trial starts only once that device's earlier trials are written.
func TestPoolTrialWaitsForItsDevicesTrialsOnDisk(t *testing.T) {
	w := &poolWriter{trials: map[string]int{}}
	devs := map[string]*poolGateDevice{}
	for _, id := range []string{"one", "two"} {
		devs[id] = &poolGateDevice{id: id, w: w}
	}
	l := Lab{
		Open:   func(ctx context.Context, id string, realtime bool) (lab.Device, error) { return devs[id], nil },
		Create: func(string, sessions.Header, bool) (Writer, error) { return w, nil },
	}
	exp := testPlan(15)
	exp.Device, exp.Devices = "", []string{"one", "two"}
	exp.Order = lab.OrderAlternate
	s, err := Start(t.Context(), l, Plan{Experiment: exp, Path: filepath.Join(t.TempDir(), "s.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	res := s.Wait()
	total := devs["one"].returned.Load() + devs["two"].returned.Load()
	if int64(res.Written.Total) != total || total < 30 {
		t.Fatalf("written %d trials, devices ran %d; want all, at least 30", res.Written.Total, total)
	}
	for id, d := range devs {
		if n := d.early.Load(); n != 0 {
			t.Errorf("%s: %d trials started before its trials before them were written", id, n)
		}
	}
}

// TestProbingKeepsTrialStartReport: the stability check's wrapper answers
// TrialStartReporter as the device it wraps does, with a Reconnector or
// without, so a run with a check keeps the late hand-off of trial events.
func TestProbingKeepsTrialStartReport(t *testing.T) {
	for _, tc := range []struct {
		name string
		dev  lab.Device
		want bool
	}{
		{"reporter", &reportingGateDevice{}, true},
		{"not a reporter", &gateCheckingDevice{}, false},
	} {
		p := withProbe(tc.dev, lab.ProbeOptions{}, nil, nil)
		r, ok := p.(lab.TrialStartReporter)
		if got := ok && r.ReportsTrialStart(); got != tc.want {
			t.Errorf("%s: the wrapped device reports trial starts: %v, want %v", tc.name, got, tc.want)
		}
	}
}
