package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// regimeSession rewrites testdata/sim-effect.jsonl (20 rounds on the
// simulated phone, B 3% slower) into a session toggled at round 11 with a
// note, the treatment 12% slower from there on.
func regimeSession(t *testing.T) string {
	t.Helper()
	f, err := os.Open("cli/testdata/sim-effect.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	toggled := false
	for sc.Scan() {
		line := sc.Text()
		var e struct {
			Type  string
			T     float64
			Trial *struct {
				Round int
				Arm   string
			}
		}
		if err := json.Unmarshal([]byte(line), &e); err == nil && e.Type == "trial" && e.Trial != nil && e.Trial.Round >= 11 {
			if !toggled {
				toggled = true
				fmt.Fprintf(&out, `{"type":"toggle","t":%g,"toggle":{"what":"tmpfs","from":"on","to":"off","round":11}}`+"\n", e.T)
				fmt.Fprintf(&out, `{"type":"note","t":%g,"note":{"text":"tmpfs off to see its effect"}}`+"\n", e.T)
			}
			if e.Trial.Arm == "treatment" {
				var m map[string]any
				json.Unmarshal([]byte(line), &m)
				tr := m["trial"].(map[string]any)
				for _, x := range tr["metrics"].([]any) {
					mm := x.(map[string]any)
					mm["value"] = mm["value"].(float64) * 1.09
				}
				b, _ := json.Marshal(m)
				line = string(b)
			}
		}
		out.WriteString(line + "\n")
	}
	if !toggled {
		t.Fatal("no round 11 in the test session")
	}
	p := filepath.Join(t.TempDir(), "regimes.jsonl")
	if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReportRegimes: report lists the regimes with their toggle and note,
// analyses the latest by default and says so, warns that the regimes
// differ, and --regime picks or pools them.
func TestReportRegimes(t *testing.T) {
	session := regimeSession(t)
	out, errs, _ := runPerflab(t, "report", session)
	for _, want := range []string{"2 regimes", "regime 1 (rounds 0–10)", "regime 2 (rounds 11–): tmpfs on → off",
		"note: tmpfs off to see its effect", "analysed: regime 2 of 2", "the toggle changed the answer: regime 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s\n%s", want, out, errs)
		}
	}
	out, _, _ = runPerflab(t, "report", session, "--regime", "1")
	if !strings.Contains(out, "analysed: regime 1 of 2 (chosen with --regime)") || !strings.Contains(out, "10/10") {
		t.Errorf("--regime 1:\n%s", out)
	}
	out, _, _ = runPerflab(t, "report", session, "--regime", "all")
	if !strings.Contains(out, "all 2 regimes pooled") || !strings.Contains(out, "20/20") {
		t.Errorf("--regime all:\n%s", out)
	}
	_, errs, code := runPerflab(t, "report", session, "--regime", "3")
	if code != exitUsage || !strings.Contains(errs, "from 1 to 2") {
		t.Errorf("--regime 3: exit %d %s", code, errs)
	}
}

// TestReplayHeadlessRegimes: replay --headless of the toggled session on
// the simulated phone shows the toggle and the note, lists the regimes,
// analyses the latest with enough trials (10/10, not the pooled 20/20),
// says so and warns that the regimes differ; --regime all pools them.
func TestReplayHeadlessRegimes(t *testing.T) {
	session := regimeSession(t)
	out, errs, code := runPerflab(t, "replay", session, "--headless", "--speed", "0")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"toggle tmpfs on → off from round 11", "note tmpfs off to see its effect",
		"2 regimes", "regime 2 (rounds 11–): tmpfs on → off; 10+10 trials", "    note: tmpfs off to see its effect",
		"analysed: regime 2 of 2 (the latest with at least 5 trials per arm", "the toggle changed the answer", "10/10"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "20/20") {
		t.Errorf("replay pooled the regimes:\n%s", out)
	}
	out, _, _ = runPerflab(t, "replay", session, "--headless", "--speed", "0", "--regime", "all")
	if !strings.Contains(out, "all 2 regimes pooled") || !strings.Contains(out, "20/20") {
		t.Errorf("--regime all:\n%s", out)
	}
	// A bad --regime fails before anything is replayed.
	out, errs, code = runPerflab(t, "replay", session, "--headless", "--regime", "3")
	if code != exitUsage || !strings.Contains(errs, "from 1 to 2") || strings.Contains(out, "trial") {
		t.Errorf("--regime 3: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestReportOrderEffect: report and replay show the order effect of the
// analysed regime (sessions.OrderEffects) and warn when the trial run
// second in a round is slower: testdata/sim-effect.jsonl rewritten with
// the second trial of every round 5% slower.
func TestReportOrderEffect(t *testing.T) {
	f, err := os.ReadFile("cli/testdata/sim-effect.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	seen := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(f), "\n"), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["type"] == "trial" {
			tr := m["trial"].(map[string]any)
			if warm, _ := tr["warmup"].(bool); !warm {
				r := tr["round"].(float64)
				if seen[r] {
					for _, x := range tr["metrics"].([]any) {
						mm := x.(map[string]any)
						mm["value"] = mm["value"].(float64) * 1.05
					}
					b, _ := json.Marshal(m)
					line = string(b)
				}
				seen[r] = true
			}
		}
		out.WriteString(line + "\n")
	}
	p := filepath.Join(t.TempDir(), "carry.jsonl")
	if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"report", p}, {"replay", p, "--headless", "--speed", "0"}} {
		got, _, _ := runPerflab(t, args...)
		for _, want := range []string{"order effect startup_ms: the second trial of a round +", "order effect: the trial run second in a round measures +"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %q:\n%s", args[0], want, got)
			}
		}
	}
}
