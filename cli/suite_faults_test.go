package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perflab/perflab/internal/gittest"
	"github.com/perflab/perflab/internal/proctest"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devlock"
	"github.com/perflab/perflab/sessions"
)

// commitFiles writes files into the repository at dir and commits them.
func commitFiles(t *testing.T, dir, msg string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "."}, {"commit", "-qm", msg}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// worktrees lists the repository's git worktrees (the checkout itself
// first).
func worktrees(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "worktree", "list", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	var wts []string
	for _, l := range strings.Split(string(out), "\n") {
		if w, ok := strings.CutPrefix(l, "worktree "); ok {
			wts = append(wts, w)
		}
	}
	return wts
}

// TestSuiteRevisionDoesNotBuild: a revision that does not compile is
// named with the compiler's words, and its worktrees are removed.
func TestSuiteRevisionDoesNotBuild(t *testing.T) {
	t.Parallel()
	repo := suiteRepo(t)
	commitFiles(t, repo, "broken", map[string]string{"broken.go": "package suitetest\n\nfunc Broken() int { return \"x\" }\n"})
	_, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--quiet")
	if code != exitError || !strings.Contains(errs, "HEAD ") || !strings.Contains(errs, "does not build") ||
		!strings.Contains(errs, "broken.go:3") || strings.Contains(errs, "session:") {
		t.Errorf("exit %d, want %d naming HEAD, the failure and the file\n%s", code, exitError, errs)
	}
	if wts := worktrees(t, repo); len(wts) != 1 {
		t.Errorf("worktrees left: %v", wts)
	}
}

// TestSuiteMalformedBenchmarkLines: a benchmark printing a line that
// reads as a result but is not one fails its trials, each saying which
// benchmark and line, and the report's warnings say it too; the other
// benchmarks are measured in every round.
func TestSuiteMalformedBenchmarkLines(t *testing.T) {
	t.Parallel()
	repo := suiteRepo(t)
	commitFiles(t, repo, "garbled", map[string]string{"garbled_test.go": "package suitetest\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\n" +
		"func BenchmarkGarbled(b *testing.B) {\n\tfor range b.N {\n\t\tWork()\n\t}\n\tfmt.Println(\"BenchmarkGarbled \\t 12 \\t abc ns/op\")\n}\n"})
	session := filepath.Join(t.TempDir(), "s.jsonl")
	// --aa: the garbled benchmark in both builds (it came with the head).
	out, errs, code := perflabIn(t, repo, "suite", "--aa", "--head", "HEAD", "--trials", "4", "--benchtime", "20x", "--json",
		"-bench", "Work|Garbled", "--out", session)
	if code != exitOK && code != exitRegression {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, `failed: benchmark output: stdout:1: benchmark BenchmarkGarbled, unit "ns/op": cannot parse "abc" as a number`) {
		t.Errorf("no failed trial naming the benchmark and the line:\n%s", errs)
	}
	r := decodeReport(t, out)
	said := false
	for _, w := range r.Warnings {
		said = said || strings.Contains(w, `trials failed or timed out: benchmark output: stdout:1: benchmark BenchmarkGarbled, unit "ns/op": cannot parse "abc"`)
	}
	if !said {
		t.Errorf("the report's warnings do not say why Garbled has no row: %q", r.Warnings)
	}
	found := false
	for _, m := range r.Metrics {
		found = found || strings.HasPrefix(m.Name, "suitetest.Work") && strings.HasSuffix(m.Name, ":units/op") && m.A.N >= 4 && m.B.N >= 4
	}
	if !found {
		t.Errorf("Work's units/op not measured in every round beside the garbled benchmark:\n%s", out)
	}
	s, err := sessions.Load(session)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, tr := range s.Trials() {
		if tr.Status != "ok" {
			failed++
			if !strings.Contains(tr.Reason, "BenchmarkGarbled") {
				t.Errorf("trial %d failed for another reason: %s", tr.Index, tr.Reason)
			}
		}
	}
	if failed == 0 {
		t.Error("no failed trial recorded")
	}
}

// TestSuiteCrossCompileFails: a package that does not build for a remote
// worker's platform is said with that platform and the compiler's words,
// and nothing is left (the cross build stops at the package clause, so
// no standard library is compiled for it).
func TestSuiteCrossCompileFails(t *testing.T) {
	repo := suiteRepo(t)
	other := "linux_arm64"
	if lab.HostPlatform() == other {
		other = "linux_amd64"
	}
	arch := strings.TrimPrefix(other, "linux_")
	// Both revisions carry the broken file, so that the go command stops
	// at loading the first, before compiling the standard library for
	// the other architecture (a minute of CPU from a cold build cache).
	commitFiles(t, repo, "arch", map[string]string{"only_" + arch + ".go": "//go:build " + arch + "\n\npackag suitetest\n"})
	commitFiles(t, repo, "more", map[string]string{"README": "more\n"})
	t.Chdir(repo)
	s, err := prepareSuite(context.Background(), suiteConfig{base: "HEAD~1", head: "HEAD", bench: ".", benchtime: "10x", pkgs: []string{"."},
		platforms: []string{lab.HostPlatform(), other}}, &strings.Builder{})
	if s != nil {
		s.cleanup()
	}
	if err == nil || !strings.Contains(err.Error(), "does not build for "+other) || !strings.Contains(err.Error(), "expected 'package'") {
		t.Errorf("prepare: %v, want the platform and the compiler's words", err)
	}
	if wts := worktrees(t, repo); len(wts) != 1 {
		t.Errorf("worktrees left: %v", wts)
	}
	if s != nil && s.tmp != "" {
		if _, err := os.Stat(s.tmp); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", s.tmp, err)
		}
	}
}

// longSuite is a suite repository, the temporary directory (TMPDIR) its
// suites get, and a maker of perflab suite commands in it that run long
// (500 rounds) unless stopped, with extra arguments.
func longSuite(t *testing.T) (repo, tmp string, long func(extra ...string) *exec.Cmd) {
	t.Helper()
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	repo, tmp = suiteRepo(t), t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp, "XDG_DATA_HOME="+t.TempDir())
	return repo, tmp, func(extra ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "500", "--benchtime", "100x"}, extra...)...)
		cmd.Dir, cmd.Env = repo, env
		return cmd
	}
}

// TestSuiteKilledLeftoversRemovedNextTime: a perflab suite killed with
// SIGKILL leaves its worktrees and temporary folder; the next perflab
// suite in the repository removes them, saying so, and leaves the
// folders of a suite still running alone.
func TestSuiteKilledLeftoversRemovedNextTime(t *testing.T) {
	t.Parallel()
	repo, tmp, long := longSuite(t)
	start := func() (*proctest.Proc, *syncBuffer) {
		cmd := long("--quiet")
		errb := &syncBuffer{}
		cmd.Stderr = errb
		p := proctest.Start(t, cmd)
		deadline := time.Now().Add(2 * time.Minute)
		for !strings.Contains(errb.String(), "session:") {
			if time.Now().After(deadline) {
				t.Fatalf("the suite did not start its session within 2m:\n%s", errb.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return p, errb
	}
	running, _ := start() // its folder and worktrees are no leftover
	killed, _ := start()
	killed.Kill9(t)
	if wts := worktrees(t, repo); len(wts) != 5 {
		t.Fatalf("worktrees of the killed and the running suite: %v", wts)
	}
	cmd := long()
	cmd.Args = append(cmd.Args[:1], "suite", "--aa", "--head", "HEAD", "-bench", "Nothing", "--quiet")
	out, _ := cmd.CombinedOutput()
	want := fmt.Sprintf("left by a perflab suite (pid %d) that was killed", killed.Pid())
	if !strings.Contains(string(out), want) || strings.Contains(string(out), fmt.Sprintf("(pid %d)", running.Pid())) {
		t.Errorf("next suite: want %q and nothing of the running suite\n%s", want, out)
	}
	if wts := worktrees(t, repo); len(wts) != 3 {
		t.Errorf("worktrees after the next suite: %v, want the checkout and the running suite's two", wts)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, suiteTmpPrefix+"*")); len(left) != 1 {
		t.Errorf("suite folders after the next suite: %v, want the running suite's", left)
	}
}

// TestSuiteOutputClosedEndsLikeCtrlC: perflab suite | head: when the
// reader of its output goes, perflab is not killed by SIGPIPE mid-run; it
// ends as on Ctrl-C, removing its worktrees and folder (main.go).
func TestSuiteOutputClosedEndsLikeCtrlC(t *testing.T) {
	t.Parallel()
	repo, tmp, long := longSuite(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := long()
	cmd.Stdout, cmd.Stderr = w, w
	p := proctest.Start(t, cmd)
	w.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "session:") {
	}
	r.Close() // as head does once it has its lines
	p.Wait()
	st := cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); !ok || ws.Signaled() || st.ExitCode() == 0 {
		t.Errorf("perflab ended with %v; want an exit status of its own (not SIGPIPE's kill, not success)", st)
	}
	if wts := worktrees(t, repo); len(wts) != 1 {
		t.Errorf("worktrees left: %v", wts)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, suiteTmpPrefix+"*")); len(left) != 0 {
		t.Errorf("suite folders left: %v", left)
	}
}

// TestLocalHostHeldByAWatch: while a perflab watch holds this host (its
// lock taken whole, as cmdWatch does for a watch on local), a run or a
// stability check on local started by hand is refused at once, naming
// the watch; a watch is refused while a run holds the host; once they let
// go, a run runs.
func TestLocalHostHeldByAWatch(t *testing.T) {
	t.Parallel()
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	watch, err := devlock.Take(filepath.Join(state, "perflab", "locks"), "local", "perflab watch w.json")
	if err != nil {
		t.Fatal(err)
	}
	perflab := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "XDG_DATA_HOME="+t.TempDir())
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	run := []string{"run", "--headless", "--quiet", "--trials", "3", "--warmup", "0", "--", "true", "true"}
	want := fmt.Sprintf("device local is in use: pid %d, perflab watch w.json", os.Getpid())
	for _, args := range [][]string{run, {"check", "local", "--duration", "1s"}} {
		if out, code := perflab(args...); code != exitError || !strings.Contains(out, want) {
			t.Errorf("perflab %v beside a watch: exit %d, want %d and %q\n%s", args, code, exitError, want, out)
		}
	}
	watch.Release()

	// And the other way: a watch on local is not started while a run
	// started by hand holds the host (shared).
	repo := gittest.New(t)
	repo.Commit("c0", map[string]string{"app.sh": "echo PERFLAB_METRIC work_ms=1\n"})
	repo.Commit("c1", map[string]string{"app.sh": "echo PERFLAB_METRIC work_ms=2\n"})
	exp := filepath.Join(t.TempDir(), "w.json")
	if err := os.WriteFile(exp, []byte(`{"device": "local", "order": "random", "trials": 3, "metrics": ["work_ms"],
 "watch": {"build": "cp app.sh \"$PERFLAB_OUT/app\"", "run": "sh {out}/app"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := devlock.Share(filepath.Join(state, "perflab", "locks"), "local")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "watch", exp, "--since", "HEAD~1", "--once", "--history", filepath.Join(t.TempDir(), "h.db"))
	cmd.Dir, cmd.Env = repo.Dir, append(os.Environ(), "XDG_STATE_HOME="+state, "XDG_DATA_HOME="+t.TempDir())
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitError || !strings.Contains(string(out), "device local is in use: other perflab experiments hold it") {
		t.Errorf("watch beside a run: exit %d, want %d and the host in use\n%s", code, exitError, out)
	}
	held.Release()
	// An A/A of this host's clock: exit 0, or 3 at the error rate.
	if out, code := perflab(run...); code != exitOK && code != exitRegression || strings.Contains(out, "in use") {
		t.Errorf("run once the watch let go: exit %d\n%s", code, out)
	}
}
