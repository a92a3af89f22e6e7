package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perflab/perflab/sessions"
)

// TestStabilityWarningInEveryView: a run whose stability check found the
// phone unstable (the seeded sim:nexus5 with its stock governor throttles)
// carries that warning, as the workbench shows it, in run --headless
// --json, report, report --json and replay --headless (issue 29: it was
// only on the screens).
func TestStabilityWarningInEveryView(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	perflab := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := dispatch(context.Background(), args, &stdout, &stderr); code != exitOK {
			t.Fatalf("perflab %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		return stdout.String()
	}
	runJSON := perflab("run", "examples/sim-controls-off.json", "--headless", "--quiet", "--json", "--device", "sim:nexus5",
		"--probe", "60s", "--trials", "6", "--out", out)
	s, err := sessions.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	ws := sessions.SetupWarnings(s.Events)
	if len(ws) != 1 || !strings.HasPrefix(ws[0], "stability check: unstable: coefficient of variation") {
		t.Fatalf("setup warnings %q, want the stability check's", ws)
	}
	want := ws[0]
	jsonHas := func(name, doc string) {
		t.Helper()
		var r struct{ Warnings []string }
		if err := json.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		if !slices.Contains(r.Warnings, want) {
			t.Errorf("%s warnings %q lack %q", name, r.Warnings, want)
		}
	}
	jsonHas("run --json", runJSON)
	jsonHas("report --json", perflab("report", out, "--json"))
	for _, args := range [][]string{{"report", out}, {"replay", out, "--headless", "--speed", "0"}} {
		if got := perflab(args...); !strings.Contains(got, "\n  "+want+"\n") {
			t.Errorf("%s lacks %q:\n%s", args[0], want, got)
		}
	}
}
