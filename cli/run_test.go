package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// perflabBinary builds the perflab binary once for the tests that run it
// as a real process.
var perflabBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "perflab")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func runPerflab(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir())
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("perflab %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// loop is a shell command doing n iterations of pure CPU work.
func loop(n int) []string {
	return []string{"sh", "-c", fmt.Sprintf("i=0; while [ $i -lt %d ]; do i=$((i+1)); done", n)}
}

func writeExperiment(t *testing.T, exp map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(exp, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "exp.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type reportJSON struct {
	Metrics []struct {
		Name           string
		Verdict        string
		DeltaPctMedian *float64 `json:"delta_pct_median"`
		A, B           struct{ N int }
		Sequential     *struct{ Method string }
	}
	Warnings []string
	Session  struct {
		ID     string
		Device struct{ ID string }
		Plan   struct{ Trials int }
		Counts struct {
			Total    int
			ByStatus map[string]int `json:"by_status"`
			Counted  map[string]int
		}
		End      *struct{ Reason string }
		Problems []struct {
			Line  int
			Error string
		}
	}
}

func decodeReport(t *testing.T, out string) reportJSON {
	t.Helper()
	var r reportJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out)
	}
	return r
}

func TestRunAAIsNoChange(t *testing.T) {
	exp := writeExperiment(t, map[string]any{
		"device": "local",
		"builds": map[string]any{"control": map[string]any{"command": loop(20000)}, "treatment": map[string]any{"command": loop(20000)}},
		"trials": 20, "warmup": 1, "order": "random", "seed": 7, "metrics": []string{"user_ms", "wall_ms"},
		// A strict alpha keeps this test's false-alarm rate at 0.1%.
		"alpha": 0.001,
	})
	session := filepath.Join(t.TempDir(), "aa.jsonl")
	stdout, stderr, code := runPerflab(t, "run", exp, "--headless", "--out", session)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "verdict") || !strings.Contains(stderr, "session: "+session) || !strings.Contains(stderr, "ETA") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	out, _, code := runPerflab(t, "report", session, "--json")
	r := decodeReport(t, out)
	if code != 0 || len(r.Metrics) != 2 {
		t.Errorf("report exit %d: %+v", code, r)
	}
	for _, m := range r.Metrics {
		// The verdict on this host's timing is not asserted, only that it
		// is one of the vocabulary.
		known := map[string]bool{"regression": true, "improvement": true, "no change": true, "inconclusive": true}
		if !known[m.Verdict] || m.A.N != 20 || m.B.N != 20 {
			t.Errorf("%s: %s with n %d/%d", m.Name, m.Verdict, m.A.N, m.B.N)
		}
	}
	if r.Session.ID == "" || r.Session.Device.ID != "local" || r.Session.Plan.Trials != 20 || r.Session.Counts.Total != 42 ||
		r.Session.Counts.ByStatus["ok"] != 42 || r.Session.End == nil || r.Session.End.Reason != "completed" {
		t.Errorf("session object %+v", r.Session)
	}
}

// TestRunDetectsRegression runs, on the seeded simulated phone, a
// treatment with a known true effect of +20% (and, swapped, -20%): the
// verdict and the exit status are asserted on the simulator, never on this
// host's timing.
func TestRunDetectsRegression(t *testing.T) {
	check := func(effect float64, wantCode int, wantVerdict string) {
		t.Helper()
		exp := writeExperiment(t, map[string]any{
			"device": "sim:pixel",
			"builds": map[string]any{
				"control":   map[string]any{"name": "feed", "app": "feed"},
				"treatment": map[string]any{"name": "feed changed", "app": "feed", "effect_pct": effect},
			},
			"trials": 30, "warmup": 1, "order": "alternate", "seed": 7, "metrics": []string{"startup_ms"}, "alpha": 0.05,
			"controls": map[string]any{"governor": "recommended", "restore_snapshot": true, "kill_app": true, "dismiss_dialogs": true,
				"clock_reset": true, "proxy": "replay", "tmpfs": true, "drop_caches": true},
		})
		session := filepath.Join(t.TempDir(), "reg.jsonl")
		stdout, stderr, code := runPerflab(t, "run", "--headless", exp, "--out", session)
		if code != wantCode || !strings.Contains(stdout, wantVerdict) {
			t.Fatalf("exit %d, want %d and %q\n%s\n%s", code, wantCode, wantVerdict, stdout, stderr)
		}
		out, _, code := runPerflab(t, "report", session, "--json")
		r := decodeReport(t, out)
		if code != wantCode || len(r.Metrics) != 1 {
			t.Fatalf("report exit %d: %+v", code, r)
		}
		for _, m := range r.Metrics {
			if m.DeltaPctMedian == nil {
				t.Fatalf("%s: no delta", m.Name)
			}
			if d := *m.DeltaPctMedian; m.Verdict != wantVerdict || math.Abs(d-effect) > 5 {
				t.Errorf("%s: %s, Δ %.1f%%; want %s near %+g%%", m.Name, m.Verdict, d, wantVerdict, effect)
			}
		}
	}
	check(20, 3, "regression")
	// The opposite effect: an improvement, and exit 0.
	check(-20, 0, "improvement")
}

// TestKill9KeepsCompletedTrials kills a real perflab run with SIGKILL and
// checks that report loads every trial it had finished.
func TestKill9KeepsCompletedTrials(t *testing.T) {
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	done := filepath.Join(dir, "done.log")
	exp := writeExperiment(t, map[string]any{
		"builds": map[string]any{
			"control":   map[string]any{"command": []string{"sh", "-c", "sleep 0.01; echo $PERFLAB_TRIAL >> " + done}},
			"treatment": map[string]any{"command": []string{"sh", "-c", "sleep 0.01; echo $PERFLAB_TRIAL >> " + done}},
		},
		"trials": 1000, "warmup": 0, "order": "random", "seed": 3,
	})
	session := filepath.Join(dir, "killed.jsonl")
	cmd := exec.Command(bin, "run", exp, "--headless", "--out", session, "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for 25 finished commands; the deadline only catches a hang.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(done)
		if bytes.Count(b, []byte("\n")) >= 25 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("after 2 minutes only %d trial commands finished", bytes.Count(b, []byte("\n")))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// Trials in the file, counted independently of the reader.
	f, err := os.Open(session)
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"trial"`) {
			written++
		}
	}
	f.Close()
	b, _ := os.ReadFile(done)
	ran := bytes.Count(b, []byte("\n"))

	out, stderr, code := runPerflab(t, "report", session, "--json")
	if code == 1 {
		t.Fatalf("report failed: %s", stderr)
	}
	r := decodeReport(t, out)
	got := r.Session.Counts.Total
	// Every trial whose command finished was recorded, except at most the
	// one in flight when the process died (the 25th may be that one). A
	// trial command the kill orphaned may still append its line after ran
	// was counted; that only lowers ran. Every recorded trial's command
	// had finished, so got ≤ ran.
	if got != written || ran < 25 || got < ran-1 || got > ran {
		t.Errorf("report loaded %d trials; %d in the file; %d commands finished", got, written, ran)
	}
	if r.Session.End != nil {
		t.Errorf("a killed run has an end event: %+v", r.Session.End)
	}
	if len(r.Session.Problems) > 1 {
		t.Errorf("problems %+v", r.Session.Problems)
	}
	tout, _, _ := runPerflab(t, "report", session)
	if !strings.Contains(tout, "run did not finish") || !strings.Contains(tout, "wall_ms") {
		t.Errorf("table report:\n%s", tout)
	}
}

func TestRunErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"builds":{"control":{"command":["true"]},"treatment":{"command":["true"]}},"controls":{"pin_cpu":"0"}}`), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--help"}, 0, "Usage: perflab run EXPERIMENT.json"},
		{[]string{"report", "--help"}, 0, "--benchstat"},
		{[]string{"replay", "--help"}, 0, "--speed"},
		{[]string{"run", "--headless"}, 2, "want an experiment file, or -- 'COMMAND A' 'COMMAND B'"},
		{[]string{"run", "/no/such.json", "--headless"}, 1, "no such file"},
		{[]string{"run", bad, "--headless"}, 1, bad + `: controls.pin_cpu: string "0", want a whole number`},
		{[]string{"run", bad, "--headless", "--device", "nowhere:1"}, 1, "controls.pin_cpu"},
		{[]string{"report", "/no/such.jsonl"}, 1, "no such file"},
		{[]string{"report", bad}, 1, "line 1: not a perflab session"},
		{[]string{"report", bad, "--json", "--csv"}, 2, "choose one of"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runPerflab(t, tt.args...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("perflab %v: exit %d, want %d with %q\n%s%s", tt.args, code, tt.code, tt.want, stdout, stderr)
		}
	}
}

func TestRunDefaultSessionPath(t *testing.T) {
	exp := writeExperiment(t, map[string]any{
		"builds": map[string]any{"control": map[string]any{"command": []string{"true"}}, "treatment": map[string]any{"command": []string{"true"}}},
		"trials": 2, "warmup": 0,
	})
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	cmd := exec.Command(bin, "run", exp, "--headless")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+data)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState.ExitCode() == 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(data, "perflab", "sessions", "*.jsonl"))
	if len(files) != 1 || !strings.Contains(string(out), "session: "+files[0]) || !strings.Contains(string(out), "session saved: "+files[0]) {
		t.Fatalf("sessions %v\n%s", files, out)
	}
	// Only the owner can read what a run recorded.
	for p, want := range map[string]os.FileMode{files[0]: 0o600, filepath.Dir(files[0]): 0o700, filepath.Join(data, "perflab"): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, st.Mode().Perm(), err, want)
		}
	}
}

// TestRunProxySaysRedactionAndAccess: a run with the proxy says, when it
// starts, which headers its recording redacts and who may use it, and the
// build finds the per-run credentials in its HTTP_PROXY.
func TestRunProxySaysRedactionAndAccess(t *testing.T) {
	hasCreds := []string{"sh", "-c", `case "$HTTP_PROXY" in http://perflab:?*@127.0.0.1:*) exit 0;; esac; echo "HTTP_PROXY=$HTTP_PROXY"; exit 1`}
	exp := writeExperiment(t, map[string]any{
		"device": "local",
		"builds": map[string]any{"control": map[string]any{"command": hasCreds}, "treatment": map[string]any{"command": hasCreds}},
		"trials": 2, "warmup": 0, "controls": map[string]any{"proxy": "record"},
		"proxy": map[string]any{"redact_headers": []string{"X-Api-Key"}},
	})
	session := filepath.Join(t.TempDir(), "p.jsonl")
	_, stderr, code := runPerflab(t, "run", exp, "--headless", "--out", session)
	if code == 1 || strings.Contains(stderr, "failed") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	want := "proxy: recording " + strings.TrimSuffix(session, ".jsonl") + ".proxy.jsonl; redacted headers: Authorization,Cookie,Proxy-Authorization,Set-Cookie,X-Api-Key (values recorded as"
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "proxy access: per-run credentials") {
		t.Errorf("stderr lacks %q and the access line:\n%s", want, stderr)
	}
}

// TestSignalsEndRunCleanly sends SIGINT (Ctrl-C), SIGTERM and SIGHUP (the
// terminal closed) to a running perflab: the trial in flight is stopped,
// the session ends with a "cancelled" end event, and the exit status is 1.
func TestSignalsEndRunCleanly(t *testing.T) {
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) { testSignalEndsRun(t, sig) })
	}
}

func testSignalEndsRun(t *testing.T, sig os.Signal) {
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	exp := writeExperiment(t, map[string]any{
		"builds": map[string]any{"control": map[string]any{"command": []string{"sleep", "0.05"}}, "treatment": map[string]any{"command": []string{"sleep", "0.05"}}},
		"trials": 1000, "warmup": 0,
	})
	session := filepath.Join(t.TempDir(), "int.jsonl")
	cmd := exec.Command(bin, "run", exp, "--headless", "--out", session)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once three trials are on disk, however slow this host is.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(session)
		if strings.Count(string(b), `"type":"trial"`) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no 3 trials after 60 s\n%s", stderr.String())
		}
	}
	cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done: // the deadline below only guards against a hang
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("perflab did not stop within 60 s of %v", sig)
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d\n%s", code, stderr.String())
	}
	out, _, _ := runPerflab(t, "report", session, "--json")
	r := decodeReport(t, out)
	if r.Session.End == nil || r.Session.End.Reason != "cancelled" || r.Session.Counts.Total < 3 {
		t.Errorf("session after %v: end %+v, %d trials", sig, r.Session.End, r.Session.Counts.Total)
	}
	if !strings.Contains(stderr.String(), "cancelled") || !strings.Contains(stderr.String(), "session saved: "+session) {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}
