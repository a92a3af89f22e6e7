package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// TestFormatCountsAddUp: every trial is said once, so the numbers of a
// session's summary add up to its total (issue 29: "9 trials: 0 control,
// 3 treatment, 2 warm-up, 5 failed" was 10).
func TestFormatCountsAddUp(t *testing.T) {
	trial := func(arm, status string, warm bool) *lab.Trial {
		return &lab.Trial{Arm: arm, Status: status, Warmup: warm}
	}
	check := func(want string, trials ...*lab.Trial) {
		t.Helper()
		c := sessions.NewCounts()
		for _, tr := range trials {
			c.Add(tr)
		}
		got := formatCounts(c)
		if got != want {
			t.Errorf("formatCounts = %q, want %q", got, want)
		}
		sum := 0
		for _, m := range regexp.MustCompile(`(?:^|, )(\d+) `).FindAllStringSubmatch(got, -1) {
			n, _ := strconv.Atoi(m[1])
			sum += n
		}
		if sum != c.Total {
			t.Errorf("%q adds up to %d, want %d trials", got, sum, c.Total)
		}
	}
	c, tr := lab.ArmControl, lab.ArmTreatment
	check("1 counted control, 1 counted treatment, 2 warm-up",
		trial(c, "ok", true), trial(tr, "ok", true), trial(c, "ok", false), trial(tr, "ok", false))
	check("2 counted control, 0 counted treatment, 1 warm-up, 5 failed (1 of them warm-up)",
		trial(c, "ok", true), trial(tr, "failed", true), trial(c, "ok", false), trial(tr, "failed", false),
		trial(c, "ok", false), trial(tr, "failed", false), trial(tr, "failed", false), trial(tr, "failed", false))
	check("0 counted control, 0 counted treatment, 3 failed, 1 timeout (2 of them warm-up)",
		trial(c, "failed", true), trial(tr, "timeout", true), trial(c, "failed", false), trial(tr, "failed", false))
}

// TestRunFailingBuildSaysErrorFirst: when a build fails, run --headless
// says the error first, prints no table of n/a when one arm has no
// counted trial, and report on the session says the same (issue 29).
func TestRunFailingBuildSaysErrorFirst(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	var stdout, stderr bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "--headless", "--quiet", "--order", "alternate", "--trials", "5",
		"--out", out, "--", "true", "echo broken >&2; exit 1"}, &stdout, &stderr)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout has a table with nothing in it:\n%s", stdout.String())
	}
	msg := stderr.String()
	lines := []string{
		"perflab run: error: treatment: 5 trials in a row failed; last: exit status 1: broken\n",
		"no counted trials of treatment: nothing to compare\n",
		"session saved: " + out + ", 10 trials: 4 counted control, 0 counted treatment, 1 warm-up, 5 failed (1 of them warm-up)\n",
	}
	at := 0
	for _, l := range lines {
		i := strings.Index(msg[at:], l)
		if i < 0 {
			t.Fatalf("stderr lacks %q after the lines before it:\n%s", l, msg)
		}
		at += i + len(l)
	}

	stdout.Reset()
	stderr.Reset()
	if code := dispatch(context.Background(), []string{"report", out}, &stdout, &stderr); code != exitOK {
		t.Errorf("report: exit %d, want %d\n%s", code, exitOK, stderr.String())
	}
	rep := stdout.String()
	if !strings.Contains(rep, "4 counted control, 0 counted treatment, 1 warm-up, 5 failed (1 of them warm-up)\n") ||
		!strings.Contains(rep, "run ended: error treatment: 5 trials in a row failed") ||
		!strings.HasSuffix(rep, "\nno counted trials of treatment: nothing to compare\n") || strings.Contains(rep, "n/a") {
		t.Errorf("report of a failed build:\n%s", rep)
	}
}
