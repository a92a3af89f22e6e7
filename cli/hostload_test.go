package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportHostBusy: a session whose trials recorded a busy host (other
// processes using 1.3 CPUs of 2) gets the same warning from report, report
// --json and replay.
func TestReportHostBusy(t *testing.T) {
	f, err := os.ReadFile("cli/testdata/sim-effect.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(string(f), "\n"), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["type"] == "trial" {
			m["trial"].(map[string]any)["host"] = map[string]any{"other_cpus": 1.2 + 0.2*float64(i%2), "load1": 2.1, "cpus": 2}
			b, _ := json.Marshal(m)
			line = string(b)
		}
		out.WriteString(line + "\n")
	}
	p := filepath.Join(t.TempDir(), "busy.jsonl")
	if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "host busy: other processes used 1.3 CPUs on average during the trials (load average 2.1 on 2 CPUs); timings are noisier than on an idle host"
	for _, args := range [][]string{{"report", p}, {"replay", p, "--headless", "--speed", "0"}} {
		if got, _, _ := runPerflab(t, args...); !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", args[0], want, got)
		}
	}
	got, _, _ := runPerflab(t, "report", p, "--json")
	var r struct{ Warnings []string }
	if err := json.Unmarshal([]byte(got), &r); err != nil {
		t.Fatalf("report --json: %v\n%s", err, got)
	}
	found := false
	for _, w := range r.Warnings {
		found = found || w == want
	}
	if !found {
		t.Errorf("report --json warnings %q lack %q", r.Warnings, want)
	}
}
