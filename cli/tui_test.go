package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// tmuxPane drives a real terminal: a tmux server of its own (-L socket),
// one session, keys in, screen text out.
type tmuxPane struct {
	t    *testing.T
	sock string
	name string
}

var tmuxCount atomic.Int32

// newTmuxPane starts command in a w×h tmux session on a private server that
// is killed when the test ends. The pane stays after command exits.
func newTmuxPane(t *testing.T, w, h int, command string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed (test.sh installs it)")
	}
	sweepStaleTmux()
	p := &tmuxPane{t: t, sock: fmt.Sprintf("perflab-test-%d-%d", os.Getpid(), tmuxCount.Add(1)), name: "main"}
	t.Cleanup(func() { exec.Command("tmux", "-L", p.sock, "kill-server").Run() })
	p.tmux("new-session", "-d", "-s", p.name, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), command)
	p.tmux("set-option", "-t", p.name, "remain-on-exit", "on")
	return p
}

// sweepStaleTmux kills the tmux servers earlier test binaries left behind:
// a binary killed by go test's -timeout (or SIGKILL) runs no t.Cleanup, and
// its server, with a perflab in its pane, would run on and load the
// machine. A socket perflab-test-PID-N whose PID is gone is such a leftover.
func sweepStaleTmux() {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = os.TempDir()
	}
	socks, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), "perflab-test-*"))
	for _, sock := range socks {
		name := filepath.Base(sock)
		f := strings.Split(name, "-")
		if len(f) != 4 {
			continue
		}
		pid, err := strconv.Atoi(f[2])
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		exec.Command("tmux", "-L", name, "kill-server").Run()
		os.Remove(sock)
	}
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys sends tmux key names ("Enter", "Down", "q").
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", p.name}, keys...)...)
}

func (p *tmuxPane) screen() string {
	p.t.Helper()
	// -S - includes the history: once the program has left the alternate
	// screen, tmux's "Pane is dead" line can scroll its output up.
	return p.tmux("capture-pane", "-p", "-S", "-", "-t", p.name)
}

// Deadlines of the tmux tests only catch hangs. The workbench answers a
// key within a second, but CI runs a race-built binary on a loaded 2-core
// machine, where 5 or 10 s for a step is no safe bound.
const (
	screenWait = 2 * time.Minute // a screen following a key or a start
	runWait    = 5 * time.Minute // trials arriving, a run completing
)

// waitFor polls the screen until cond holds, failing with the last screen.
func (p *tmuxPane) waitFor(desc string, timeout time.Duration, cond func(string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	var s string
	for time.Now().Before(deadline) {
		s = p.screen()
		if cond(s) {
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatalf("waiting %s for %s; screen:\n%s", timeout, desc, s)
	return ""
}

func (p *tmuxPane) waitText(text string, timeout time.Duration) string {
	p.t.Helper()
	return p.waitFor(fmt.Sprintf("%q", text), timeout, func(s string) bool { return strings.Contains(s, text) })
}

// pRow matches startup_ms's p-value row; its groups are n A and n B.
var pRow = regexp.MustCompile(`startup_ms\s+(?:\S+\s+){4,5}(\d+)/(\d+)`)

// TestWorkbenchInTmux drives the real binary in a real terminal: pick the
// simulated phone and two builds, step through the controls, start, watch
// the CI and p-values update, toggle randomization, quit, then replay the
// saved session.
func TestWorkbenchInTmux(t *testing.T) {
	t.Parallel() // mostly waits on a real-time run: overlap it with the other tmux test
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := fmt.Sprintf("env -u NO_COLOR XDG_DATA_HOME=%s/data XDG_CONFIG_HOME=%s/config HOME=%s", home, home, home)
	p := newTmuxPane(t, 120, 40, fmt.Sprintf("%s %s; echo PERFLAB-EXIT=$?", env, bin))

	p.waitText("1/3 pick a device", screenWait)
	p.waitText("▸ sim:pixel", screenWait)
	p.keys("Enter")
	p.waitText("2/3 pick builds on sim:pixel", screenWait)
	p.keys("Enter") // A: feed
	p.waitFor("A chosen", screenWait, func(s string) bool { return regexp.MustCompile(`A control\s+feed`).MatchString(s) })
	p.keys("Down", "Enter") // B: feed+5%
	s := p.waitText("3/3 controls on sim:pixel", screenWait)
	if !strings.Contains(s, "A feed  vs  B feed+5%") {
		t.Fatalf("controls screen does not name the builds:\n%s", s)
	}
	// Step through every control: each shows what it does.
	steps := []struct{ label, explain string }{
		{"restore snapshot", "restore the app's saved state"},
		{"kill app", "force-stop the app"},
		{"dismiss dialogs", "close crash and ANR dialogs"},
		{"drop caches", "drop the page cache"},
		{"proxy", "record network responses once"},
		{"clock reset", "reset the device clock"},
		{"governor profile", "lock CPU/GPU frequencies"},
		{"tmpfs app data", "keep app data in RAM"},
	}
	for i, st := range steps {
		if i > 0 {
			p.keys("Down")
		}
		p.waitFor("cursor on "+st.label, screenWait, func(s string) bool {
			return regexp.MustCompile(`▸ ` + regexp.QuoteMeta(st.label) + `\s+\[`).MatchString(s)
		})
		if !strings.Contains(p.screen(), st.explain) {
			t.Errorf("%s: explanation %q not shown", st.label, st.explain)
		}
	}
	// restore snapshot and kill app on; trials 30 → 5 per arm; stability
	// check 30 s → 10 s; real-time pace stays.
	p.keys("Up", "Up", "Up", "Up", "Up", "Up", "Up", "space", "Down", "space")
	p.waitFor("two controls on", screenWait, func(s string) bool {
		return regexp.MustCompile(`restore snapshot\s+\[on\]`).MatchString(s) && regexp.MustCompile(`kill app\s+\[on\]`).MatchString(s)
	})
	for i := 0; i < 8; i++ {
		p.keys("Down")
	}
	p.waitFor("cursor on trials", screenWait, func(s string) bool { return regexp.MustCompile(`▸ trials`).MatchString(s) })
	for i := 0; ; i++ { // down the ladder from the default
		before := p.screen()
		if strings.Contains(before, "[5 per arm]") {
			break
		}
		if i == 8 {
			t.Fatalf("trials never reached 5:\n%s", before)
		}
		p.keys("Left")
		p.waitFor("the trials to change", screenWait, func(s string) bool { return s != before })
	}
	p.keys("Down", "Down", "Left")
	p.waitFor("5 per arm, 10 s check", screenWait, func(s string) bool {
		return strings.Contains(s, "[5 per arm]") && regexp.MustCompile(`stability check\s+\[10s\]`).MatchString(s)
	})
	p.keys("Enter")

	p.waitText("MFLOPS stability check", screenWait)
	// The CI and p-value panels update as trials arrive.
	first := p.waitFor("p-values for 2 trials per arm", runWait, func(s string) bool {
		m := pRow.FindStringSubmatch(s)
		return m != nil && atoi(m[1]) >= 2 && atoi(m[2]) >= 2
	})
	p.keys("o") // randomization off: random → alternate from the next round
	// With counted trials in regime 1 it asks first (issue 29).
	p.waitText("order alternate starts regime 2: the verdict will use its rounds only (y/N)", screenWait)
	p.keys("y")
	p.waitText("order: random → alternate", screenWait)
	p.waitText("· order alternate ·", screenWait)
	// The toggle starts regime 2: the panels list it and, once its trials
	// are counted, analyse a regime and say which.
	later := p.waitFor("the regimes line", runWait, func(s string) bool {
		m := pRow.FindStringSubmatch(s)
		return m != nil && strings.Contains(s, "analysed: regime") &&
			regexp.MustCompile(`2 r\d+–\s+[1-9]\d* rounds?\s+order random→alternate\s+[1-9]\d*\+[1-9]`).MatchString(s)
	})
	if pRow.FindStringSubmatch(first)[0] == pRow.FindStringSubmatch(later)[0] {
		t.Errorf("p-value row did not change:\n%s", later)
	}
	// The layout follows a resize to 80×24.
	p.tmux("resize-window", "-t", p.name, "-x", "80", "-y", "24")
	p.waitFor("the narrow layout", screenWait, func(s string) bool {
		return strings.Contains(s, "p-values") && strings.Contains(s, "trials") && len(strings.Split(strings.TrimRight(s, "\n"), "\n")) <= 24
	})
	p.tmux("resize-window", "-t", p.name, "-x", "120", "-y", "40")
	end := p.waitFor("the final analysis", runWait, func(s string) bool {
		return strings.Contains(s, "ended: completed") && strings.Contains(s, "· final")
	})
	if !regexp.MustCompile(`startup_ms\s+[+-]\d+\.\d+%\s+\[[^]]+\].*(regression|no change|improvement|inconclusive)`).MatchString(end) {
		t.Errorf("no final CI row with a verdict for startup_ms:\n%s", end)
	}
	p.keys("q")
	out := p.waitText("PERFLAB-EXIT=0", screenWait)
	m := regexp.MustCompile(`perflab replay (\S+\.jsonl)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no session path printed:\n%s", out)
	}
	path := m[1]

	// The session holds what happened, the toggle included.
	sess, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var probes, counted, toggles int
	for _, ev := range sess.Events {
		switch {
		case ev.Type == lab.EventProbe:
			probes++
		case ev.Type == lab.EventTrial && ev.Trial.Counted():
			counted++
		case ev.Type == lab.EventToggle && ev.Toggle.What == "order" && ev.Toggle.To == "alternate":
			toggles++
		}
	}
	if sess.Header.Device.ID != "sim:pixel" || probes < 5 || counted != 10 || toggles != 1 || sess.End() == nil || sess.End().Reason != "completed" {
		t.Errorf("session: device %s, %d probe samples, %d counted trials, %d order toggles, end %+v",
			sess.Header.Device.ID, probes, counted, toggles, sess.End())
	}

	// Replay it, without colour: same panels, the toggle in the events.
	r := newTmuxPane(t, 120, 40, fmt.Sprintf("%s NO_COLOR=1 %s replay %s; echo PERFLAB-EXIT=$?", env, bin, path))
	r.waitText("replay", screenWait)
	r.keys("G")
	s = r.waitText("replay · at end", screenWait)
	for _, want := range []string{"order: random → alternate", "startup_ms", "p-values", "MFLOPS stability check"} {
		if !strings.Contains(s, want) {
			t.Errorf("replay screen lacks %q:\n%s", want, s)
		}
	}
	esc := r.tmux("capture-pane", "-p", "-e", "-t", r.name)
	if regexp.MustCompile(`\x1b\[[0-9;]*(38|48);[25];`).MatchString(esc) {
		t.Errorf("NO_COLOR set but the screen has colours:\n%q", esc)
	}
	r.keys("q")
	r.waitText("PERFLAB-EXIT=0", screenWait)
	// Replay ran nothing: the session file is unchanged.
	again, err := sessions.Load(path)
	if err != nil || len(again.Events) != len(sess.Events) {
		t.Errorf("session changed by replay: %d → %d events (%v)", len(sess.Events), len(again.Events), err)
	}
	_ = filepath.Base(path)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestRunOpensWorkbenchInTmux: perflab run EXP.json without --headless opens
// the workbench on the experiment's controls; a detected regression exits
// with status 3, as --headless does. The builds report their own metric
// (100 vs 200 ms, not this host's speed), so the verdict is certain. Its
// stdout is redirected to a file: the workbench draws on the terminal and
// the file gets the session's table (issue 29).
func TestRunOpensWorkbenchInTmux(t *testing.T) {
	t.Parallel() // mostly waits on a real-time run: overlap it with the other tmux test
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	report := func(base int) []string {
		return []string{"sh", "-c", fmt.Sprintf(`echo "PERFLAB_METRIC work_ms=$((%d + $$ %% 7)) unit=ms"`, base)}
	}
	exp := writeExperiment(t, map[string]any{
		"device": "local",
		"builds": map[string]any{
			"control":   map[string]any{"name": "work-100", "command": report(100)},
			"treatment": map[string]any{"name": "work-200 (+100%)", "command": report(200)},
		},
		"trials": 10, "warmup": 1, "order": "alternate", "seed": 1, "metrics": []string{"work_ms"},
	})
	table := filepath.Join(home, "table.txt")
	p := newTmuxPane(t, 80, 24, fmt.Sprintf("env XDG_DATA_HOME=%s XDG_CONFIG_HOME=%s %s run %s > %s; echo PERFLAB-EXIT=$?",
		home, home, bin, exp, table))
	s := p.waitText("controls on local", screenWait)
	if !strings.Contains(s, "work-200") {
		t.Fatalf("controls screen:\n%s", s)
	}
	// The stability check off: on local it is 30 s of the MFLOPS probe on
	// every core, which this test does not need.
	cursor := regexp.MustCompile(`▸ [^[]+`)
	for i := 0; ; i++ {
		at := cursor.FindString(p.waitFor("the cursor", screenWait, cursor.MatchString))
		if strings.HasPrefix(at, "▸ stability check") {
			break
		}
		if i == 30 {
			t.Fatalf("no stability check row:\n%s", p.screen())
		}
		p.keys("Down")
		p.waitFor("the cursor to move", screenWait, func(s string) bool { return cursor.FindString(s) != at })
	}
	p.keys("Left", "Left") // 30 s → 10 s → off
	p.waitFor("stability check off", screenWait, func(s string) bool {
		return regexp.MustCompile(`stability check\s+\[off\]`).MatchString(s)
	})
	p.keys("Enter")
	// The run's end may be drawn before its final analysis arrives (the
	// analysis runs off the UI loop; on a loaded host the panel still shows
	// an earlier trial's verdict for a moment): wait for both.
	regressed := regexp.MustCompile(`work_ms\s+\+\d+(\.\d+)?%.*regression`)
	p.waitFor("the end and the +100% metric as a regression", runWait, func(s string) bool {
		return strings.Contains(s, "local · ended: completed") && strings.Contains(s, "· final") && regressed.MatchString(s)
	})
	p.keys("q")
	if s := p.waitText("PERFLAB-EXIT=3", screenWait); !strings.Contains(s, "session saved:") {
		t.Errorf("the terminal does not say where the session went:\n%s", s)
	}
	if m, _ := filepath.Glob(filepath.Join(home, "perflab", "sessions", "*.jsonl")); len(m) != 1 {
		t.Errorf("sessions written: %v", m)
	}
	out, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`work_ms.*\+\d+(\.\d+)?%.*regression`).Match(out) || strings.Contains(string(out), "\x1b") {
		t.Errorf("stdout's file is not the session's table:\n%q", out)
	}
}

func TestWorkbenchNeedsATerminal(t *testing.T) {
	for _, args := range [][]string{nil, {"replay", "examples/none.jsonl"}} {
		_, stderr, code := runPerflab(t, args...)
		if args == nil && (code != 2 || !strings.Contains(stderr, "needs a terminal") || !strings.Contains(stderr, "--headless")) {
			t.Errorf("perflab with stdout a pipe: code %d, stderr %q", code, stderr)
		}
		if args != nil && (code == 0 || !strings.Contains(stderr, "none.jsonl")) {
			// A missing session is reported before any terminal is needed.
			t.Errorf("perflab %v: code %d, stderr %q", args, code, stderr)
		}
	}
}

func TestTUIFlags(t *testing.T) {
	var out, errb strings.Builder
	if code := cmdTUI(t.Context(), []string{"--help"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "Opens the workbench") || !strings.Contains(errb.String(), "-adb") {
		t.Errorf("--help: code %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := cmdTUI(t.Context(), []string{"sim:pixel"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unexpected argument "sim:pixel"`) {
		t.Errorf("positional: code %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := openRunTUI(t.Context(), "perflab run", "examples/no-such.json", nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no-such.json") {
		t.Errorf("missing experiment: code %d, %q", code, errb.String())
	}
}

// TestHistoryViewInTmux: a watched repository's history at 80×24 opens
// on the series with the alert, shows the whole alert line; enter opens
// the alert's confirmation session in the workbench's replay screen, esc
// comes back to the history; b shows the bisect, esc comes back; q quits
// (issue 35).
func TestHistoryViewInTmux(t *testing.T) {
	t.Parallel()
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := fmt.Sprintf("env XDG_DATA_HOME=%s XDG_CONFIG_HOME=%s XDG_CACHE_HOME=%s XDG_STATE_HOME=%s", home, home, home, home)
	repo, db := filepath.Join(home, "repo"), filepath.Join(home, "h.db")
	for _, args := range [][]string{
		{"example", "watch-repo", repo, "--commits", "14", "--step-at", "8", "--step", "4"},
		{"watch", "example:sim-watch", "--git", repo, "--since", "base", "--once", "--history", db},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home, "XDG_STATE_HOME="+home)
		if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != exitRegression {
			t.Fatalf("perflab %v: %v\n%s", args, err, out)
		}
	}
	p := newTmuxPane(t, 80, 24, fmt.Sprintf("%s %s history view --history %s; echo PERFLAB-EXIT=$?", env, bin, db))
	s := p.waitText("enter its session", screenWait)
	if !strings.Contains(s, "▸ ! startup_ms (ms)") || !regexp.MustCompile(`alert 1 confirmed regression \+\d`).MatchString(s) ||
		!strings.Contains(strings.Join(strings.Fields(s), " "), "first bad") {
		t.Fatalf("history screen:\n%s", s)
	}
	p.keys("Enter")
	s = p.waitText("replay", screenWait)
	p.keys("Escape")
	p.waitText("enter its session", screenWait)
	p.keys("b")
	s = p.waitText("bisect of the alert", screenWait)
	if !strings.Contains(s, "first bad") {
		t.Errorf("bisect screen:\n%s", s)
	}
	p.keys("Escape")
	p.waitText("enter its session", screenWait)
	p.keys("q")
	p.waitText("PERFLAB-EXIT=0", screenWait)
}
