package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/internal/gittest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/sshworker/sshdtest"
	"github.com/perflab/perflab/sessions"
)

// suiteRepo makes a git repository holding a Go module with two
// benchmarks: Work reports Units units/op (100 in the first commit, 130 in
// the second, which also adds OnlyHead), Same reports 50 in both. The
// units/op metrics are deterministic: verdicts on them do not depend on
// this host's clock.
func suiteRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/suitetest\n\ngo 1.26\n")
	work := "package suitetest\n\n// Units is the work Work does per call.\nconst Units = %d\n\nvar sink int\n\n// Work does Units units of work.\nfunc Work() {\n\tfor i := 0; i < Units*100; i++ {\n\t\tsink += i\n\t}\n}\n"
	write("work.go", strings.Replace(work, "%d", "100", 1))
	tests := "package suitetest\n\nimport \"testing\"\n\nfunc BenchmarkWork(b *testing.B) {\n\tfor range b.N {\n\t\tWork()\n\t}\n\tb.ReportMetric(Units, \"units/op\")\n}\n\nfunc BenchmarkSame(b *testing.B) {\n\tfor range b.N {\n\t\tsink++\n\t}\n\tb.ReportMetric(50, \"units/op\")\n}\n"
	write("work_test.go", tests)
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "base")
	write("work.go", strings.Replace(work, "%d", "130", 1))
	write("work_test.go", tests+"\nfunc BenchmarkOnlyHead(b *testing.B) {\n\tfor range b.N {\n\t\tsink++\n\t}\n}\n")
	git("commit", "-qam", "head")
	return dir
}

// perflabIn runs the perflab binary in dir.
func perflabIn(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return perflabInEnv(t, dir, nil, args...)
}

// perflabInEnv is perflabIn with env added to the environment (e.g.
// COLUMNS=80, the width of a terminal).
func perflabInEnv(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+t.TempDir()), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// TestSuiteTwoRevisions compares the module's benchmarks at its two
// commits: Work's deterministic units/op is a regression (+30%), Same's
// is the same constant (no test), OnlyHead is listed and not compared,
// no worktree is left behind, and two local workers share the rounds.
func TestSuiteTwoRevisions(t *testing.T) {
	repo := suiteRepo(t)
	session := filepath.Join(t.TempDir(), "suite.jsonl")
	out, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "100x", "--json", "--quiet",
		"--workers", "2", "--out", session)
	if code != exitRegression || !strings.Contains(errs, "not compared: example.com/suitetest.BenchmarkOnlyHead is only in HEAD") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	r := decodeReport(t, out)
	verdicts := map[string]string{}
	for _, m := range r.Metrics {
		if strings.Contains(m.Name, ":") {
			verdicts[strings.TrimPrefix(m.Name, "suitetest.")] = m.Verdict // the package first, no -N suffix
		}
	}
	if verdicts["Work:units/op"] != "regression" || verdicts["Same:units/op"] != "not tested (50 in every round)" {
		t.Errorf("verdicts %v", verdicts)
	}
	if list, _ := exec.Command("git", "-C", repo, "worktree", "list").Output(); strings.Count(string(list), "\n") != 1 {
		t.Errorf("worktrees left behind:\n%s", list)
	}
	// The report a person reads: what changed first (the benchmarks are
	// the rows), the order-effect tests in one line, no -N suffix.
	text, _, _ := perflabIn(t, repo, "report", session)
	lines := strings.Split(text, "\n")
	if !regexp.MustCompile(`^[0-2] of 2 benchmarks changed`).MatchString(lines[0]) ||
		!strings.Contains(text, "1 of 1 other metrics changed: 1 regressed (suitetest.Work:units/op +30.00%)") ||
		strings.Count(text, "order effect") != 1 || strings.Contains(text, "Work-") || runtime.NumCPU() > 1 && !strings.Contains(text, "GOMAXPROCS") {
		t.Errorf("report:\n%s", text)
	}
	// In a terminal of 80 columns the report fits it, the reasons of the
	// rows not tested said once; --wide keeps every column.
	narrow, _, _ := perflabInEnv(t, repo, []string{"COLUMNS=80"}, "report", session)
	for _, l := range strings.Split(narrow, "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("report at 80 columns has a line of %d:\n%s", utf8.RuneCountInString(l), narrow)
			break
		}
	}
	wide, _, _ := perflabInEnv(t, repo, []string{"COLUMNS=80"}, "report", session, "--wide")
	if !strings.Contains(strings.Join(strings.Fields(narrow), " "), "50 in every round (1)") || !strings.Contains(wide, "not tested (50 in every round)") || analysis.WidestLine(wide) <= 80 {
		t.Errorf("report at 80 columns:\n%s\nwith --wide:\n%s", narrow, wide)
	}
	// Two local workers ran rounds side by side.
	s, err := sessions.Load(session)
	if err != nil {
		t.Fatal(err)
	}
	byDevice := map[string]int{}
	for _, tr := range s.Trials() {
		byDevice[tr.Device]++
	}
	if len(byDevice) != 2 || byDevice["local"] == 0 || byDevice["local#2"] == 0 {
		t.Errorf("trials by worker %v", byDevice)
	}
}

// TestSuiteErrors: outside a module, an unknown revision, no matching
// benchmark: a clear message, exit 1.
func TestSuiteErrors(t *testing.T) {
	repo := suiteRepo(t)
	for _, tc := range []struct {
		dir  string
		args []string
		want string
	}{
		{t.TempDir(), nil, "not in a Go module"},
		{repo, []string{"--base", "v9.9.9"}, `revision "v9.9.9" does not exist`},
		{repo, []string{"-bench", "Nothing"}, `no benchmark matching -bench "Nothing" is in both revisions`},
		{oneCommit(t), nil, `revision "HEAD~1" does not exist in`},
		{oneCommit(t), nil, "(HEAD has 1 commit); name the base with --base REV (--base HEAD: the work tree against the last commit), or compare a revision with itself with --aa"},
		// More workers than half the CPUs: said before anything runs.
		{t.TempDir(), []string{"--workers", "64"}, "--workers 64 on a host of"},
	} {
		_, errs, code := perflabIn(t, tc.dir, append([]string{"suite", "--quiet"}, tc.args...)...)
		if code != exitError || !strings.Contains(errs, tc.want) {
			t.Errorf("suite %v: exit %d, %s", tc.args, code, errs)
		}
	}
}

// oneCommit is a Go module of one commit.
func oneCommit(t *testing.T) string {
	r := gittest.New(t)
	r.Commit("one", map[string]string{"go.mod": "module one\n\ngo 1.22\n", "one_test.go": "package one\n\nimport \"testing\"\n\nfunc BenchmarkX(b *testing.B) {}\n"})
	return r.Dir
}

// TestSuiteCachegrind measures the suite under cachegrind, on this host
// and an ssh host (perflab's own binary goes with the benchmarks):
// instructions and estimated cycles of each benchmark's own process
// (GOMAXPROCS=1), a count the hosts' load does not move: Work's 30% more
// work per call is a regression in every round.
func TestSuiteCachegrind(t *testing.T) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind is not installed (test.sh installs it)")
	}
	t.Parallel()
	l := sshdtest.Start(t, []string{"w1"}, "")
	repo := suiteRepo(t)
	session := filepath.Join(t.TempDir(), "s.jsonl")
	out, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--measure", "cachegrind", "-bench", "Work",
		"--trials", "6", "--benchtime", "400x", "--warmup", "0", "--json", "--quiet", "--worker", "local", "--worker", "ssh://w1", "--ssh-config", l.Config, "--out", session)
	if code != exitRegression {
		t.Fatalf("exit %d\n%s\n%s", code, errs, out)
	}
	byDevice := okTrialsByDevice(t, session)
	if byDevice["local"] == 0 || byDevice["ssh://w1"] == 0 {
		t.Errorf("trials by worker %v: want both this host and the ssh host", byDevice)
	}
	if left, _ := os.ReadDir(l.TmpDir("w1")); len(left) > 0 {
		t.Errorf("w1: left behind in its TMPDIR: %v", left)
	}
	r := decodeReport(t, out)
	got := map[string]string{}
	for _, m := range r.Metrics {
		got[m.Name] = m.Verdict
		// Per iteration (a run of N and one of 2N iterations subtracted):
		// start-up and setup cancel, so 30% more loop work reads +30%.
		if d := m.DeltaPctMedian; m.Name == "suitetest.Work:instructions/op" && (d == nil || *d < 28 || *d > 32) {
			t.Errorf("%s: Δ %v%%, want +30%% (±2)", m.Name, d)
		}
	}
	if got["suitetest.Work:instructions/op"] != "regression" || got["suitetest.Work:est-cycles/op"] != "regression" {
		t.Errorf("verdicts %v", got)
	}
	if _, errs, code := perflabIn(t, repo, "suite", "--measure", "cachegrind", "--benchtime", "1s"); code != exitUsage || !strings.Contains(errs, "count of iterations") {
		t.Errorf("--benchtime 1s under cachegrind: exit %d, %s", code, errs)
	}
}

// TestSuiteOverSSH runs the suite on two real sshd hosts as workers
// (reached through an ssh configuration file's aliases, as `ssh ALIAS`):
// the binaries go to a private folder on each, both run rounds, Work's
// deterministic units/op is still a regression, and nothing is left on
// the hosts.
func TestSuiteOverSSH(t *testing.T) {
	t.Parallel()
	l := sshdtest.Start(t, []string{"w1", "w2"}, "")
	repo := suiteRepo(t)
	session := filepath.Join(t.TempDir(), "suite.jsonl")
	out, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "100x", "--json", "--quiet",
		"--worker", "ssh://w1", "--worker", "ssh://w2", "--ssh-config", l.Config, "--out", session)
	if code != exitRegression {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	r := decodeReport(t, out)
	for _, m := range r.Metrics {
		if strings.HasPrefix(m.Name, "suitetest.Work") && strings.HasSuffix(m.Name, ":units/op") && m.Verdict != "regression" {
			t.Errorf("%s: %s, want regression", m.Name, m.Verdict)
		}
	}
	byDevice := okTrialsByDevice(t, session)
	if len(byDevice) != 2 || byDevice["ssh://w1"] == 0 || byDevice["ssh://w2"] == 0 {
		t.Errorf("trials by worker %v", byDevice)
	}
	for _, w := range []string{"w1", "w2"} {
		if left, _ := os.ReadDir(l.TmpDir(w)); len(left) > 0 {
			t.Errorf("%s: left behind in its TMPDIR: %v", w, left)
		}
	}
}

// TestSuiteWorkerErrors: a host that refuses the key, or that lacks
// valgrind for --measure cachegrind, is named before anything is built; a
// malformed worker is a usage error.
func TestSuiteWorkerErrors(t *testing.T) {
	t.Parallel()
	// bare's sessions find uname in their PATH, and nothing else.
	bare := t.TempDir()
	if err := os.Symlink("/usr/bin/uname", filepath.Join(bare, "uname")); err != nil {
		t.Fatal(err)
	}
	l := sshdtest.Start(t, []string{"w1", "bare"}, "", sshdtest.SetEnv("bare", "PATH="+bare))
	l.Alias(t, "stranger", "w1", sshdtest.NewKey(t), "") // a key w1 does not accept
	repo := suiteRepo(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--worker", "ssh://stranger", "--ssh-config", l.Config}, exitError, "ssh://stranger: cannot connect"},
		{[]string{"--worker", "w1"}, exitUsage, `--worker "w1": want ssh://HOST`},
		{[]string{"--worker", "ssh://bare", "--measure", "cachegrind", "--ssh-config", l.Config}, exitError,
			"--measure cachegrind needs valgrind on every worker: ssh://bare has no valgrind in its PATH"},
	} {
		_, errs, code := perflabIn(t, repo, append([]string{"suite", "--quiet"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) || strings.Contains(errs, "building") {
			t.Errorf("suite %v: exit %d, %s", tc.args, code, errs)
		}
	}
}

// TestSuiteAAAndAgree: --aa builds the head twice and finds no change in
// its deterministic units (the same constant: untested); --agree counts
// the benchmarks on which two suite runs agree.
func TestSuiteAAAndAgree(t *testing.T) {
	t.Parallel()
	repo := suiteRepo(t)
	dir := t.TempDir()
	// ns/op is this host's clock: an A/A may report it changed (the
	// error rate allows it), so the exit status may be 3; units/op is the
	// same constant in both builds and never tested.
	aaOut, errs, code := perflabIn(t, repo, "suite", "--aa", "--head", "HEAD", "--trials", "8", "--benchtime", "50x", "--quiet", "--json", "-bench", "Work", "--out", filepath.Join(dir, "aa.jsonl"))
	if code != exitOK && code != exitRegression || !strings.Contains(errs, "(A)") || !strings.Contains(errs, "(B)") {
		t.Fatalf("--aa: exit %d\n%s", code, errs)
	}
	for _, m := range decodeReport(t, aaOut).Metrics {
		if strings.HasSuffix(m.Name, ":units/op") && m.Verdict != "not tested (130 in every round)" {
			t.Errorf("--aa: %s is %s, want not tested (the same constant in both builds)", m.Name, m.Verdict)
		}
	}
	var runs []string
	for _, seed := range []string{"1", "2"} {
		path := filepath.Join(dir, "ab"+seed+".jsonl")
		if _, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "50x", "--quiet",
			"-bench", "Work", "--seed", seed, "--out", path); code != exitRegression {
			t.Fatalf("seed %s: exit %d\n%s", seed, code, errs)
		}
		runs = append(runs, path)
	}
	out, errs, code := perflabIn(t, repo, "suite", "--agree", "--json", runs[0], runs[1])
	if code != exitOK {
		t.Fatalf("--agree: exit %d\n%s", code, errs)
	}
	var ag struct {
		Rows []struct {
			Metric, A, B string
			Agree        bool
		}
		Agree, Total int
	}
	if err := json.Unmarshal([]byte(out), &ag); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := false
	for _, r := range ag.Rows {
		if strings.HasSuffix(r.Metric, ":units/op") {
			found = true
			if !r.Agree || r.A != "regression" || r.B != "regression" {
				t.Errorf("%+v: want both regression, agreeing", r)
			}
		}
	}
	if !found || ag.Total != len(ag.Rows) || ag.Agree > ag.Total {
		t.Errorf("agreement %+v", ag)
	}
	text, _, code := perflabIn(t, repo, "suite", "--agree", runs[0], runs[0])
	if code != exitOK || !strings.Contains(text, fmt.Sprintf("%d of %d tested metrics agree (100.0%%)", ag.Total, ag.Total)) {
		t.Errorf("a run against itself:\n%s", text)
	}
	if _, errs, code := perflabIn(t, repo, "suite", "--agree", runs[0]); code != exitUsage || !strings.Contains(errs, "two session files") {
		t.Errorf("--agree with one session: exit %d %s", code, errs)
	}
}

// TestSuiteOnPhoneThroughADB runs the suite on a phone served by perflab
// simdevice through a real adb server: the test binaries are built for
// the platform the phone says it runs (the simulated phone: this host's),
// pushed to a private folder under /data/local/tmp, run over adb shell,
// and the folder is gone at the end; Work's deterministic units/op is a
// regression there too.
func TestSuiteOnPhoneThroughADB(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	serial := startSimdevice(t, srv, "pixel")
	repo := suiteRepo(t)
	session := filepath.Join(t.TempDir(), "suite.jsonl")
	out, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "100x", "--json", "--quiet",
		"-bench", "Work", "--worker", "adb:"+serial, "--adb", srv.Addr, "--out", session)
	if code != exitRegression || !strings.Contains(errs, "worker adb:"+serial+": linux_") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	r := decodeReport(t, out)
	found := false
	for _, m := range r.Metrics {
		if strings.HasPrefix(m.Name, "suitetest.Work") && strings.HasSuffix(m.Name, ":units/op") {
			found = m.Verdict == "regression"
		}
	}
	s, err := sessions.Load(session)
	if err != nil {
		t.Fatal(err)
	}
	dir := ""
	for _, e := range s.Events {
		if e.Type == lab.EventTrial && e.Trial.Status != "ok" {
			t.Errorf("trial %d: %s %s", e.Trial.Index, e.Trial.Status, e.Trial.Reason)
		}
		if e.Type == lab.EventSettings && e.Settings.Detail["worker_dir"] != "" {
			dir = e.Settings.Detail["worker_dir"]
		}
	}
	if !found || dir == "" {
		t.Fatalf("Work:units/op regression %v, worker folder %q\n%s", found, dir, out)
	}
	ls, err := srv.Client.Run(context.Background(), serial, "ls /data/local/tmp")
	if err != nil || strings.Contains(ls, path.Base(dir)) {
		t.Errorf("the worker's folder %s after the run: %s %v", dir, ls, err)
	}
}

// TestSuiteParallelPinned: --parallel 2 runs two local workers, each
// pinned to its own CPUs (taskset), which the session records.
func TestSuiteParallelPinned(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset not installed")
	}
	repo := suiteRepo(t)
	session := filepath.Join(t.TempDir(), "suite.jsonl")
	_, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "50x", "--quiet",
		"-bench", "Work", "--parallel", "2", "--out", session)
	if code != exitRegression {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	s, err := sessions.Load(session)
	if err != nil {
		t.Fatal(err)
	}
	cpus := map[string]bool{}
	for _, e := range s.Events {
		if e.Type == lab.EventSettings {
			for k, v := range e.Settings.Detail {
				if strings.HasSuffix(k, "cpus") {
					cpus[v] = true
				}
			}
		}
	}
	want := 2
	if runtime.NumCPU() < 2 {
		want = 1
	}
	if len(cpus) != want {
		t.Errorf("pinned CPU sets recorded: %v, want %d", cpus, want)
	}
	if _, errs, code := perflabIn(t, repo, "suite", "--parallel", "2", "--workers", "2"); code != exitUsage || !strings.Contains(errs, "give one") {
		t.Errorf("--parallel with --workers: exit %d %s", code, errs)
	}
}

// TestSuiteSSHWorkerLostThenInterrupted: a host that goes away mid-run
// leaves the pool and the other goes on with the rounds; Ctrl-C then
// stops the run, and the remaining host is left with nothing of it.
func TestSuiteSSHWorkerLostThenInterrupted(t *testing.T) {
	t.Parallel()
	l := sshdtest.Start(t, []string{"w1", "w2"}, "")
	repo := suiteRepo(t)
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(t.TempDir(), "suite.jsonl")
	cmd := exec.Command(bin, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "1000", "--benchtime", "100x", "-bench", "Work",
		"--worker", "ssh://w1", "--worker", "ssh://w2", "--ssh-config", l.Config, "--quiet", "--out", session)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	trialsOn := func(dev string) int {
		b, _ := os.ReadFile(session)
		return strings.Count(string(b), `"device":"`+dev+`"`)
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(120 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("%s: not after 120 s\n%s", what, stderr.String())
			}
		}
	}
	waitUntil("trials on both hosts", func() bool { return trialsOn("ssh://w1") >= 3 && trialsOn("ssh://w2") >= 3 })
	l.Stop("w2")
	before := trialsOn("ssh://w1")
	waitUntil("w1 going on alone", func() bool { return trialsOn("ssh://w1") >= before+6 })
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(120 * time.Second): // only catches a hang
		cmd.Process.Kill()
		t.Fatalf("still running 120 s after Ctrl-C\n%s", stderr.String())
	}
	b, _ := os.ReadFile(session)
	if !strings.Contains(string(b), "ssh://w2") || !strings.Contains(string(b), "leaves the pool") && !strings.Contains(string(b), "left the pool") {
		t.Errorf("the session does not say ssh://w2 left the pool\n%s", stderr.String())
	}
	if !strings.Contains(string(b), `"reason":"cancelled"`) {
		t.Errorf("the session does not end cancelled\n%s", stderr.String())
	}
	if left, _ := os.ReadDir(l.TmpDir("w1")); len(left) > 0 {
		t.Errorf("w1: left behind after Ctrl-C: %v", left)
	}
}

// TestSuiteFailingBenchmark: a benchmark that fails (b.Fatal) is named in
// the report's warnings with the trials it failed in, while the other
// benchmarks of the same trials are measured and compared.
func TestSuiteFailingBenchmark(t *testing.T) {
	t.Parallel()
	repo := suiteRepo(t)
	broken := "package suitetest\n\nimport \"testing\"\n\nfunc BenchmarkBroken(b *testing.B) {\n\tb.Fatal(\"no input\")\n}\n"
	if err := os.WriteFile(filepath.Join(repo, "broken_test.go"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	// The work tree (with Broken) against itself.
	out, errs, code := perflabIn(t, repo, "suite", "--aa", "--trials", "8", "--benchtime", "20x", "--json", "--quiet", "-bench", "Work|Broken")
	if code != exitOK && code != exitRegression { // an A/A's ns/op may be reported (this host's clock)
		t.Fatalf("exit %d\n%s", code, errs)
	}
	r := decodeReport(t, out)
	want := "benchmark example.com/suitetest.Broken failed, exit status 1 (in 16 of 32 counted trials)"
	found, work := false, false
	for _, w := range r.Warnings {
		found = found || strings.Contains(w, want)
	}
	for _, m := range r.Metrics {
		work = work || strings.HasPrefix(m.Name, "suitetest.Work")
	}
	if !found || !work {
		t.Errorf("warnings %q (want %q), Work measured %v", r.Warnings, want, work)
	}
}

// TestSuiteWorkerFullDisk: a host whose disk cannot take the test
// binaries leaves the pool at setup, said with the host and tar's words;
// the rounds go to the other host, and nothing is left on either. With no
// other host the run fails, saying so.
func TestSuiteWorkerFullDisk(t *testing.T) {
	t.Parallel()
	l := sshdtest.Start(t, []string{"w1", "full"}, "", sshdtest.FullDisk("full", 256))
	repo := suiteRepo(t)
	session := filepath.Join(t.TempDir(), "suite.jsonl")
	out, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "100x", "--json", "--quiet",
		"-bench", "Work", "--worker", "ssh://full", "--worker", "ssh://w1", "--ssh-config", l.Config, "--out", session)
	if code != exitRegression {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	r := decodeReport(t, out)
	left := false
	for _, w := range r.Warnings {
		left = left || strings.HasPrefix(w, "ssh://full left the pool after 0 trials (error: device setup: copying ") &&
			strings.Contains(w, "Wrote only") && strings.HasSuffix(w, "the other devices ran the rest")
	}
	if !left {
		t.Errorf("the report does not say that ssh://full left, and why: %q", r.Warnings)
	}
	s, err := sessions.Load(session)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range s.Trials() {
		if tr.Device != "ssh://w1" || tr.Status != "ok" {
			t.Errorf("trial %d on %s: %s %s", tr.Index, tr.Device, tr.Status, tr.Reason)
		}
	}
	for _, w := range []string{"w1", "full"} {
		if left, _ := os.ReadDir(l.TmpDir(w)); len(left) > 0 {
			t.Errorf("%s: left behind in its TMPDIR: %v", w, left)
		}
	}

	_, errs, code = perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "100x", "--quiet",
		"-bench", "Work", "--worker", "ssh://full", "--ssh-config", l.Config, "--out", filepath.Join(t.TempDir(), "alone.jsonl"))
	if code != exitError || !strings.Contains(errs, "copying ") || !strings.Contains(errs, "Wrote only") {
		t.Errorf("the full host alone: exit %d, want %d and tar's words\n%s", code, exitError, errs)
	}
	if left, _ := os.ReadDir(l.TmpDir("full")); len(left) > 0 {
		t.Errorf("full alone: left behind in its TMPDIR: %v", left)
	}
}

// okTrialsByDevice counts the session's trials by device, each to be OK.
func okTrialsByDevice(t *testing.T, session string) map[string]int {
	t.Helper()
	s, err := sessions.Load(session)
	if err != nil {
		t.Fatal(err)
	}
	byDevice := map[string]int{}
	for _, tr := range s.Trials() {
		if tr.Status != "ok" {
			t.Errorf("trial %d on %s: %s %s", tr.Index, tr.Device, tr.Status, tr.Reason)
		}
		byDevice[tr.Device]++
	}
	return byDevice
}

// TestSuitePlanRaisesRounds: --trials below the fewest rounds with which
// the time family can report anything is raised, and the plan says so
// before the first round; without --trials the run stops when decided,
// its cap and threshold said up front.
func TestSuitePlanRaisesRounds(t *testing.T) {
	t.Parallel()
	repo := suiteRepo(t)
	_, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "3", "--benchtime", "20x", "--quiet", "--json", "-bench", "Work")
	if code != exitRegression || !strings.Contains(errs, "rounds raised from 3 to 6") || !strings.Contains(errs, "--stop fixed") {
		t.Errorf("exit %d\n%s", code, errs)
	}
	out, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--max-trials", "8", "--benchtime", "20x", "--quiet", "--json", "-bench", "Work", "--metrics", "custom")
	if code != exitRegression || !strings.Contains(errs, "--stop auto), at most 8 rounds of each") || !strings.Contains(errs, "threshold ±5%") ||
		!strings.Contains(errs, "on the rounds' 20% trimmed mean log ratio (--trim)") {
		t.Errorf("exit %d\n%s", code, errs)
	}
	for _, m := range decodeReport(t, out).Metrics {
		if strings.HasSuffix(m.Name, "units/op") != (m.Verdict == "regression") || !strings.HasSuffix(m.Name, "units/op") && !strings.HasPrefix(m.Verdict, "not tested") {
			t.Errorf("--metrics custom: %s %q", m.Name, m.Verdict)
		}
		if s := m.Sequential; strings.HasSuffix(m.Name, "units/op") && (s == nil || !strings.Contains(s.Method, "20% trimmed mean")) {
			t.Errorf("%s: the sequential analysis is not the trimmed one: %+v", m.Name, s)
		}
	}
	// --trim 0 looks at the mean; a share beyond a quarter is refused.
	out, errs, code = perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--max-trials", "8", "--benchtime", "20x", "--quiet", "--json", "-bench", "Work", "--metrics", "custom", "--trim", "0")
	if code != exitRegression || !strings.Contains(errs, "on the rounds' mean log ratio (--trim 0)") {
		t.Errorf("--trim 0: exit %d\n%s", code, errs)
	}
	for _, m := range decodeReport(t, out).Metrics {
		if s := m.Sequential; s != nil && strings.Contains(s.Method, "trimmed") {
			t.Errorf("--trim 0: %s %s", m.Name, s.Method)
		}
	}
	if _, errs, code := perflabIn(t, repo, "suite", "--trim", "0.3"); code != exitUsage || !strings.Contains(errs, "--trim 0.3: want 0 to 0.25") {
		t.Errorf("--trim 0.3: exit %d\n%s", code, errs)
	}
}

// TestSuiteShardMerge: two shards split the benchmarks (each in exactly
// one), merge joins them into one report whose deterministic verdicts are
// one run's (Work's units/op a regression, Same's not tested), and a
// missing shard is named, exit 1.
func TestSuiteShardMerge(t *testing.T) {
	t.Parallel()
	repo := suiteRepo(t)
	dir := t.TempDir()
	var paths []string
	for _, k := range []string{"1/2", "2/2"} {
		path := filepath.Join(dir, strings.Replace(k, "/", "of", 1)+".jsonl")
		_, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "20x", "--quiet", "--shard", k, "--out", path)
		if code != exitOK && code != exitRegression || !strings.Contains(errs, "shard "+k+": 1 of the 2 benchmark functions") {
			t.Fatalf("--shard %s: exit %d\n%s", k, code, errs)
		}
		paths = append(paths, path)
	}
	out, errs, code := perflabIn(t, repo, "merge", "--json", paths[0], paths[1])
	if code != exitRegression {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errs)
	}
	var m mergedReport
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	v := map[string]string{}
	for _, r := range m.Metrics {
		v[r.Name] = r.Verdict
	}
	if v["suitetest.Work:units/op"] != "regression" || v["suitetest.Same:units/op"] != "not tested (50 in every round)" || len(m.Shards) != 2 || len(m.Failed) != 0 {
		t.Errorf("merged: %v shards %+v failed %v", v, m.Shards, m.Failed)
	}
	text, _, code := perflabIn(t, repo, "merge", paths[1])
	if code != exitError || !strings.Contains(text, "shard 1/2 missing") {
		t.Errorf("one shard of two: exit %d\n%s", code, text)
	}
	if _, errs, code := perflabIn(t, repo, "suite", "--shard", "3/2"); code != exitUsage || !strings.Contains(errs, "want K/N") {
		t.Errorf("--shard 3/2: exit %d\n%s", code, errs)
	}
}

// TestSuiteMarkdown: --markdown prints the GitHub-flavoured summary (the
// regression first, in bold) instead of the table; with --json it is
// refused.
func TestSuiteMarkdown(t *testing.T) {
	repo := suiteRepo(t)
	out, errs, code := perflabIn(t, repo, "suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "100x", "--markdown", "--quiet",
		"--out", filepath.Join(t.TempDir(), "s.jsonl"))
	if code != exitRegression || !strings.HasPrefix(out, "### perflab: ") || !strings.Contains(out, "| metric | A | B |") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	// Work's units/op (deterministic: 130 against 100) is a regression,
	// in bold, among the changed rows, which come before the others (the
	// times' verdicts are the host's, not asserted).
	rows := strings.Split(out[strings.Index(out, "|---"):], "\n")[1:]
	work, firstUnchanged := -1, len(rows)
	for i, r := range rows {
		if strings.Contains(r, "Work:units/op") && strings.Contains(r, "**regression**") {
			work = i
		}
		if strings.HasPrefix(r, "|") && !strings.Contains(r, "**") && firstUnchanged == len(rows) {
			firstUnchanged = i
		}
	}
	if work < 0 || work > firstUnchanged {
		t.Errorf("Work:units/op's regression at row %d, the first unchanged row %d:\n%s", work, firstUnchanged, out)
	}
	if _, errs, code := perflabIn(t, repo, "suite", "--markdown", "--json"); code != exitUsage || !strings.Contains(errs, "give one") {
		t.Errorf("--markdown --json: exit %d %s", code, errs)
	}
}
