package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCorruptLineAndFormats(t *testing.T) {
	exp := writeExperiment(t, map[string]any{
		"builds": map[string]any{"control": map[string]any{"command": []string{"true"}}, "treatment": map[string]any{"command": []string{"true"}}},
		"trials": 5, "warmup": 0, "order": "alternate", "seed": 1,
	})
	session := filepath.Join(t.TempDir(), "s.jsonl")
	if _, stderr, code := runPerflab(t, "run", exp, "--headless", "--out", session, "--quiet"); code == 1 {
		t.Fatal(stderr)
	}
	data, _ := os.ReadFile(session)
	lines := strings.SplitAfter(string(data), "\n")
	lines[6] = "{\"type\":\"trial\",\"t\":0.1,\"trial\":{\"ind\n" // line 7, mid-trial garbage
	os.WriteFile(session, []byte(strings.Join(lines, "")), 0o644)

	stdout, stderr, code := runPerflab(t, "report", session)
	if code == 1 || !strings.Contains(stderr, session+":7: corrupt line skipped") || !strings.Contains(stdout, "9 counted") && !strings.Contains(stdout, "4 counted") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	csvOut, _, _ := runPerflab(t, "report", session, "--csv")
	if n := strings.Count(csvOut, "\n"); n != 1+9*3 { // header + 9 trials × 3 default metrics
		t.Errorf("csv has %d lines:\n%s", n, csvOut)
	}
	bench, _, _ := runPerflab(t, "report", session, "--benchstat")
	if !strings.Contains(bench, "arm: control\nBenchmarkSession/device=local 1 ") {
		t.Errorf("benchstat export:\n%s", bench)
	}
	replay, _, code := runPerflab(t, "replay", session, "--headless", "--speed", "0")
	if code != 0 || strings.Count(replay, " trial ") != 9 || !strings.Contains(replay, "end completed") {
		t.Errorf("replay exit %d:\n%s", code, replay)
	}
}

// TestReportMarkdownAndHTML: --markdown prints the summary instead of
// the table (exit 3: the session's regression), --html writes the page
// beside the table; --markdown with another format is refused.
func TestReportMarkdownAndHTML(t *testing.T) {
	const session = "cli/testdata/sim-effect.jsonl"
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"report", session, "--markdown"}, &out, &errb); code != exitRegression ||
		!strings.HasPrefix(out.String(), "### perflab: 1 of 1 metric changed; 1 regression") || strings.Contains(out.String(), "p adj  ") {
		t.Errorf("--markdown: exit %d\n%s%s", code, out.String(), errb.String())
	}
	page := filepath.Join(t.TempDir(), "s.html")
	out.Reset()
	errb.Reset()
	if code := Main(context.Background(), []string{"report", session, "--html", page}, &out, &errb); code != exitRegression ||
		!strings.Contains(out.String(), "startup_ms") || !strings.Contains(errb.String(), "page written to "+page) {
		t.Errorf("--html: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if b, err := os.ReadFile(page); err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte(`class="regression"`)) {
		t.Errorf("page: %v, %d bytes", err, len(b))
	}
	if code := Main(context.Background(), []string{"report", session, "--markdown", "--json"}, &out, &errb); code != exitUsage {
		t.Errorf("--markdown --json: exit %d", code)
	}
}
