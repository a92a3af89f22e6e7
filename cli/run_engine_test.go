package cli

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

// fullDisk is a session writer that takes n trial lines and then fails, as
// a file on a full disk (or past RLIMIT_FSIZE) does.
type fullDisk struct {
	*sessions.Writer
	n int
}

func (w *fullDisk) Write(ev lab.Event) error {
	if ev.Type == lab.EventTrial {
		if w.n == 0 {
			return errors.New("write: no space left on device")
		}
		w.n--
	}
	return w.Writer.Write(ev)
}

// TestRunClosingMessageCountsWhatIsOnDisk: issue 12 item 10. When writes
// fail, run --headless says how many trials the file holds, never
// "session saved" with the trials it saw.
func TestRunClosingMessageCountsWhatIsOnDisk(t *testing.T) {
	exp, err := lab.LoadExperiment("examples/sim-controls-on.json")
	if err != nil {
		t.Fatal(err)
	}
	exp.Trials, exp.Warmup = 200, 0
	path := filepath.Join(t.TempDir(), "s.jsonl")
	l := deviceLab(devices.Options{Seed: exp.Seed})
	l.Create = func(p string, h sessions.Header, _ bool) (engine.Writer, error) {
		w, err := sessions.Create(p, h)
		return &fullDisk{Writer: w, n: 29}, err
	}
	var out, errb bytes.Buffer
	h := &headlessRun{stdout: &out, stderr: &errb, quiet: true}
	code := h.run(t.Context(), engine.Plan{Experiment: *exp, Tool: "perflab test", Source: "x.json", Path: path}, l)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	s, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := sessions.CountTrials(s.Events).Total; n != 29 {
		t.Fatalf("file holds %d trials, want 29", n)
	}
	if msg := errb.String(); strings.Contains(msg, "session saved") || !strings.Contains(msg, "holds 29 trials") || !strings.Contains(msg, "no space left") {
		t.Errorf("closing message does not count what is on disk:\n%s", msg)
	}
}

// TestRunHeadlessProbe: run --headless --probe runs the engine's stability
// check before the first trial, as the workbench does, records it and says
// its verdict.
func TestRunHeadlessProbe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.jsonl")
	var out, errb bytes.Buffer
	code := dispatch(t.Context(), []string{"run", "examples/sim-controls-on.json", "--headless", "--probe", "10s", "--trials", "5", "--out", path}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	s, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	probes, trialSeen := 0, false
	for _, e := range s.Events {
		switch e.Type {
		case lab.EventProbe:
			if trialSeen {
				t.Fatal("probe sample after a trial")
			}
			probes++
		case lab.EventTrial:
			trialSeen = true
		}
	}
	if probes < 5 || !strings.Contains(errb.String(), "stability check before the first trial:\nverdict: ") {
		t.Errorf("%d probe samples; stderr:\n%s", probes, errb.String())
	}
	if s.Header.Source != "examples/sim-controls-on.json" || s.Header.Host == "" {
		t.Errorf("header source %q host %q", s.Header.Source, s.Header.Host)
	}
	for _, bad := range [][]string{{"--probe", "-1s"}, {"--probe", "25h"}} {
		errb.Reset()
		if code := dispatch(t.Context(), append([]string{"run", "examples/sim-controls-on.json", "--headless"}, bad...), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "--probe") {
			t.Errorf("%v: exit %d, %s", bad, code, errb.String())
		}
	}
}
