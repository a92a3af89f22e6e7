package sessions

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

func testProfile() *lab.Profile {
	p := &lab.Profile{Source: "test", PeriodNs: 1_000_000,
		Spans: []lab.Span{{Name: "load", StartNs: 0, EndNs: 5_000_000}, {Name: "draw", StartNs: 5_000_000, EndNs: 0}}}
	for i := range 10 {
		st := []string{"app.decode", "app.main"}
		if i%2 == 1 {
			st = []string{"app.parse", "app.main"}
		}
		p.Samples = append(p.Samples, lab.ProfileSample{Stack: st, TimeNs: int64(i) * 1_000_000})
	}
	p.Label()
	return p
}

// TestTrialProfileFile: a trial's profile is written beside the session
// with its checksum and labels, read back whole, refused with the file
// named when it changed, and pprof's own tool reads it with the labels.
func TestTrialProfileFile(t *testing.T) {
	p := testProfile()
	if !strings.Contains(strings.Join(p.Notes, ""), `phase "draw" has no end`) {
		t.Errorf("notes %q", p.Notes)
	}
	session := filepath.Join(t.TempDir(), "s.jsonl")
	tr := &lab.Trial{Index: 12, Round: 6, Arm: lab.ArmTreatment, Build: "new"}
	ref := WriteTrialProfile(session, tr, "sim:pixel", p)
	if ref.File != "s.profiles/trial-000012.pb.gz" || len(ref.SHA256) != 64 || ref.Samples != 10 || ref.Source != "test" {
		t.Fatalf("ref %+v", ref)
	}
	pp, err := LoadTrialProfile(session, ref)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	phases := map[string]int64{}
	for _, s := range pp.Sample {
		n += s.Value[0]
		phases[s.Label["phase"][0]] += s.Value[0]
		if s.Label["arm"][0] != "treatment" || s.Label["trial"][0] != "12" || s.Label["round"][0] != "6" || s.Label["device"][0] != "sim:pixel" {
			t.Errorf("labels %v", s.Label)
		}
	}
	if n != 10 || phases["load"] != 5 || phases["draw"] != 5 || len(pp.Sample) != 4 {
		t.Errorf("%d samples in %d, phases %v", n, len(pp.Sample), phases)
	}
	var folded bytes.Buffer
	if err := WriteFolded(&folded, pp); err != nil || folded.String() != "app.main;app.decode 5\napp.main;app.parse 5\n" {
		t.Errorf("folded %q, %v", folded.String(), err)
	}
	if goTool, err := exec.LookPath("go"); err == nil {
		out, err := exec.Command(goTool, "tool", "pprof", "-top", "-tagfocus", "phase=draw", filepath.Join(filepath.Dir(session), ref.File)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "app.decode") || !strings.Contains(string(out), "5ms, 50.00% of 10ms total") {
			t.Errorf("go tool pprof: %v\n%s", err, out)
		}
	}
	path := filepath.Join(filepath.Dir(session), ref.File)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-3], 0o644)
	if _, err := LoadTrialProfile(session, ref); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a cut file: %v", err)
	}
	ref.SHA256 = ""
	if _, err := LoadTrialProfile(session, ref); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a cut file without checksum: %v", err)
	}
}

// TestProfileRefRoundTrip: a trial line with a profile reference reads
// back the same through the fast decoder and encoding/json alike.
func TestProfileRefRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, NewHeader("test", lab.DeviceInfo{ID: "sim:pixel"}, &lab.Experiment{}))
	if err != nil {
		t.Fatal(err)
	}
	ref := &lab.ProfileRef{File: "s.profiles/trial-000000.pb.gz", SHA256: strings.Repeat("ab", 32), Samples: 7, Source: "sim", Note: "1 sample without symbols"}
	tr := &lab.Trial{Index: 0, Arm: lab.ArmControl, Status: lab.StatusOK, Metrics: []lab.Metric{{Name: "ms", Value: 1}}, Profile: ref}
	if err := w.Write(lab.Event{Type: lab.EventTrial, Trial: tr}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Events {
		if e.Type == lab.EventTrial && (e.Trial.Profile == nil || *e.Trial.Profile != *ref) {
			t.Errorf("read back %+v", e.Trial.Profile)
		}
	}
}

// TestSuiteBenchstat: a suite session exports one go test -bench line per
// benchmark and trial (its name before ":UNIT", each value with its
// unit), which benchstat -col arm compares benchmark by benchmark.
func TestSuiteBenchstat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, NewHeader("test", lab.DeviceInfo{ID: "local"}, &lab.Experiment{Device: "local", Suite: &lab.SuiteInfo{Module: "m"}}))
	if err != nil {
		t.Fatal(err)
	}
	for i, arm := range []string{lab.ArmControl, lab.ArmTreatment} {
		w.Write(lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Index: i, Arm: arm, Status: lab.StatusOK, Metrics: []lab.Metric{
			{Name: "Work-2", Value: 10 + float64(i), Unit: "ns/op"}, {Name: "Work-2:B/op", Value: 8, Unit: "B/op"},
			{Name: "Same-2", Value: 3, Unit: "ns/op"}}}})
	}
	w.Close()
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteBenchstat(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "session: " + s.Header.ID + "\narm: control\nBenchmarkWork-2 1 10 ns/op 8 B/op\nBenchmarkSame-2 1 3 ns/op\n" +
		"arm: treatment\nBenchmarkWork-2 1 11 ns/op 8 B/op\nBenchmarkSame-2 1 3 ns/op\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
