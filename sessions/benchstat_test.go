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

// benchstatTool finds golang.org/x/perf/cmd/benchstat on PATH or in the Go
// toolchain's bin directory, where test.sh installs it.
func benchstatTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("benchstat"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "benchstat")
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	t.Skip("benchstat not installed (./test.sh installs it with go install)")
	return ""
}

// TestBenchstatRealBaseIsControl writes a session whose first counted
// trial is the treatment's, 5× slower than the control, and checks that
// the real benchstat reports wall_ms +400%: control is the base, as README's
// `benchstat -col arm` promises, whatever order the trials ran in.
func TestBenchstatRealBaseIsControl(t *testing.T) {
	tool := benchstatTool(t)
	var evs []lab.Event
	for i := range 12 {
		arm, v := lab.ArmTreatment, 50.0+float64(i%3)
		if i%4 == 1 || i%4 == 2 { // rounds of B A, A B, ...: treatment first
			arm, v = lab.ArmControl, 10.0+float64(i%3)*0.2
		}
		evs = append(evs, trialEvent(i, arm, false, lab.StatusOK, v))
	}
	s, err := Load(writeSession(t, evs))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBenchstat(&buf, s); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-col", "arm", path}, {"-col", "arm@(control treatment)", path}} {
		out, err := exec.Command(tool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("benchstat %q: %v\n%s", args, err, out)
		}
		text := string(out)
		head := strings.SplitN(text, "\n", 3)
		if !strings.Contains(text, "+400.00%") || strings.Contains(text, "-80.00%") || len(head) < 2 ||
			strings.Index(head[1], "control") > strings.Index(head[1], "treatment") {
			t.Errorf("benchstat %q: want control as base and wall_ms +400%%:\n%s", args, text)
		}
	}
}
