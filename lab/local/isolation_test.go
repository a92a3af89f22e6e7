package local

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perflab/perflab/internal/proctest"
	"github.com/perflab/perflab/lab"
)

// helperEnv makes the test binary, re-executed, act as a perflab process
// running one trial of the script in helperScriptEnv (see TestMain).
const (
	helperEnv       = "PERFLAB_LOCAL_TEST_HELPER"
	helperScriptEnv = "PERFLAB_LOCAL_TEST_SCRIPT"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "run-trial" {
		os.Exit(helperRunTrial(os.Getenv(helperScriptEnv)))
	}
	os.Exit(m.Run())
}

// helperRunTrial sets up a local device and runs one trial of script, as
// perflab would.
func helperRunTrial(script string) int {
	exp := &lab.Experiment{Device: "local", Trials: 1, Builds: map[string]lab.Build{
		lab.ArmControl:   {Command: []string{"sh", "-c", script}},
		lab.ArmTreatment: {Command: []string{"sh", "-c", script}},
	}}
	d := New()
	if _, err := d.Setup(context.Background(), exp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer d.Close()
	r := d.RunTrial(context.Background(), lab.TrialRequest{Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: exp.Builds[lab.ArmControl]})
	fmt.Println(r.Status, r.Reason)
	return 0
}

func waitPids(t *testing.T, file string, n int) []int {
	t.Helper()
	return proctest.WaitPids(t, file, n, 2*time.Minute) // only catches a hang
}

func alive(pid int) bool { return proctest.Running(pid) }

func waitDead(t *testing.T, what string, pids []int) {
	t.Helper()
	proctest.WaitGone(t, what, pids, 2*time.Minute)
}

// treeScript starts, inside a trial, a process in the trial's group, one in
// a session of its own (setsid) with a child in yet another session, and
// writes their pids and the trial's own into pidfile.
func treeScript(pidfile string) string {
	return fmt.Sprintf(`f=%s
sleep 300 &
echo $! >> $f.tmp
setsid sh -c 'setsid sleep 300 & echo $! >> %s.tmp; echo $$ >> %s.tmp; exec sleep 300' &
while [ $(wc -l < $f.tmp) -lt 3 ]; do sleep 0.01; done
echo $$ >> $f.tmp
mv $f.tmp $f
sleep 300`, pidfile, pidfile, pidfile)
}

// TestTrialsDieWithPerflab kills a real perflab process (this test binary
// re-executed, running a trial) by SIGKILL and by SIGHUP, and checks that
// the whole trial tree dies with it: its group, and setsid children.
func TestTrialsDieWithPerflab(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pids")
			cmd := exec.Command(os.Args[0])
			// Killed, it cannot remove its folder: TMPDIR keeps it the test's.
			cmd.Env = append(os.Environ(), helperEnv+"=run-trial", helperScriptEnv+"="+treeScript(pidfile), "TMPDIR="+t.TempDir())
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pids := waitPids(t, pidfile, 4)
			for _, pid := range pids {
				if !alive(pid) {
					t.Fatalf("process %d of the trial is not running before the kill", pid)
				}
			}
			cmd.Process.Signal(sig)
			cmd.Wait()
			waitDead(t, "after perflab got "+sig.String(), pids)
		})
	}
}

// TestSetsidLeftoversEndedAfterTrial: processes a trial leaves behind in
// sessions of their own are ended when the trial ends, and cannot report
// into the next trial.
func TestSetsidLeftoversEndedAfterTrial(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pids")
	script := fmt.Sprintf(`if [ "$PERFLAB_TRIAL" = 0 ]; then
  setsid sh -c 'setsid sh -c "sleep 0.5; echo PERFLAB_METRIC injected=666" & echo $! >> %[1]s.tmp; echo $$ >> %[1]s.tmp; sleep 0.5; echo PERFLAB_METRIC injected2=1' &
  while [ ! -s %[1]s.tmp ] || [ $(wc -l < %[1]s.tmp) -lt 2 ]; do sleep 0.01; done
  mv %[1]s.tmp %[1]s
else
  sleep 1
fi
echo PERFLAB_METRIC x=1`, pidfile)
	d := setup(t, script, nil)
	b := d.exp.Builds[lab.ArmControl]
	r0 := d.RunTrial(context.Background(), lab.TrialRequest{Index: 0, Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b})
	metric(t, r0, "x")
	pids := waitPids(t, pidfile, 2)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("leftover %d still alive after its trial", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	r1 := d.RunTrial(context.Background(), lab.TrialRequest{Index: 1, Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b})
	metric(t, r1, "x")
	for _, m := range r1.Metrics {
		if strings.HasPrefix(m.Name, "injected") {
			t.Errorf("trial 1 recorded %s from trial 0's leftover", m.Name)
		}
	}
}

// TestQuickSetsidChildrenAreReaped: a child that starts a session of its
// own and exits before its trial does comes back to perflab as a zombie;
// it is reaped, not left to fill the pid table.
func TestQuickSetsidChildrenAreReaped(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	d := setup(t, fmt.Sprintf(`f=%s; touch $f; n=$(wc -l < $f)
setsid sh -c 'echo $$ >> %s' & wait
(setsid sh -c 'echo $$ >> %s' &)
while [ $(wc -l < $f) -lt $((n+2)) ]; do sleep 0.01; done
sleep 0.05`, pidfile, pidfile, pidfile), nil)
	for i := 0; i < 5; i++ {
		if r := trial(d, lab.Controls{}); r.Status != lab.StatusOK {
			t.Fatal(r.Reason)
		}
	}
	for _, pid := range waitPids(t, pidfile, 10) {
		if st, ok := readStat(pid); ok {
			t.Errorf("process %d left behind in state %c", pid, st.state)
		}
	}
}

// TestEscapedLeftoverCannotReachLaterTrial: a process that hides from the
// leftover search (it drops the run's mark from its environment) and
// outlives its trial still cannot write into a later trial's output or
// metrics port.
func TestEscapedLeftoverCannotReachLaterTrial(t *testing.T) {
	dir := t.TempDir()
	pidfile, done := filepath.Join(dir, "pid"), filepath.Join(dir, "done")
	script := fmt.Sprintf(`if [ "$PERFLAB_TRIAL" = 0 ]; then
  env -u %[3]s setsid python3 -c '
import os, socket, time
open("%[1]s.tmp", "w").write(str(os.getpid()) + "\n"); os.rename("%[1]s.tmp", "%[1]s")
time.sleep(0.4)
print("PERFLAB_METRIC injected=666", flush=True)
h, p = os.environ["PERFLAB_METRICS_ADDR"].rsplit(":", 1)
s = socket.create_connection((h, int(p)))
s.sendall(os.environ["PERFLAB_METRICS_TOKEN"].encode() + b"\nPERFLAB_METRIC injected_tcp=1\n")
s.close()
open("%[2]s", "w").write("done")
' &
  while [ ! -s %[1]s ]; do sleep 0.01; done
else
  i=0; while [ ! -e %[2]s ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done
  echo PERFLAB_METRIC x=1
fi`, pidfile, done, RunIDEnv)
	d := setup(t, script, nil)
	b := d.exp.Builds[lab.ArmControl]
	// Trial 0 prints nothing itself: its empty output files must still not
	// be handed to trial 1 while the leftover holds them.
	if r := d.RunTrial(context.Background(), lab.TrialRequest{Index: 0, Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b}); r.Status != lab.StatusOK {
		t.Fatal(r.Reason)
	}
	pids := waitPids(t, pidfile, 1)
	t.Cleanup(func() { syscall.Kill(pids[0], syscall.SIGKILL); alive(pids[0]) })
	r1 := d.RunTrial(context.Background(), lab.TrialRequest{Index: 1, Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b})
	metric(t, r1, "x")
	if _, err := os.Stat(done); err != nil {
		t.Fatalf("the escaped leftover did not finish its writes during trial 1 (%v); the test proves nothing", err)
	}
	for _, m := range r1.Metrics {
		if strings.HasPrefix(m.Name, "injected") {
			t.Errorf("trial 1 recorded %s from trial 0's escaped leftover", m.Name)
		}
	}
}

// TestMetricsPortRefusesOtherClients: while a trial runs, a client without
// its token (this test; and, when the test runs as root, a process of
// another user, nobody, who cannot read the trial's environment) writes
// metric lines to the port. None is recorded.
func TestMetricsPortRefusesOtherClients(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	goFile := filepath.Join(dir, "go")
	d := setup(t, fmt.Sprintf(`echo $$ > %[1]s.tmp; mv %[1]s.tmp %[1]s
i=0; while [ ! -e %[2]s ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done
echo PERFLAB_METRIC own=1`, pidfile, goFile), func(e *lab.Experiment) { e.Metrics = []string{"own", "injected"} })
	addr := d.srv.addr()
	done := make(chan lab.TrialResult)
	go func() { done <- trial(d, lab.Controls{}) }()
	pid := waitPids(t, pidfile, 1)[0]
	send := func(lines string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		c.Write([]byte(lines))
		c.Close()
	}
	send("PERFLAB_METRIC injected=666\n")
	send("0123456789abcdef0123456789abcdef\nPERFLAB_METRIC injected=667\n")
	refused := 2
	if os.Geteuid() == 0 {
		// Another local user: it cannot read the token from /proc, so it
		// sends the metric line alone.
		attack := fmt.Sprintf(`
import os, socket
tok = b""
try:
    env = open("/proc/%d/environ", "rb").read().split(b"\0")
    tok = [e.split(b"=", 1)[1] for e in env if e.startswith(b"%s=")][0] + b"\n"
    print("READ THE TOKEN")
except PermissionError:
    pass
h, p = "%s".rsplit(":", 1)
s = socket.create_connection((h, int(p)))
s.sendall(tok + b"PERFLAB_METRIC injected=668\n")
s.close()
`, pid, lab.MetricsTokenEnv, addr)
		cmd := exec.Command("/usr/bin/python3", "-c", attack)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("client as nobody: %v %s", err, out)
		}
		refused++
	} else {
		t.Log("not root: the other-user client is not tried")
	}
	os.WriteFile(goFile, nil, 0o600)
	r := <-done
	want := fmt.Sprintf("requested metric injected was not reported (print \"PERFLAB_METRIC injected=VALUE\" on stdout or to PERFLAB_METRICS_ADDR); %d connection(s) to PERFLAB_METRICS_ADDR were refused", refused)
	if r.Status != lab.StatusFailed || !strings.Contains(r.Reason, want) {
		t.Errorf("got %s %q, want failed %q", r.Status, r.Reason, want)
	}
}

// TestHooksUnderTrialTimeout: prepare and cleanup commands are killed at
// trial_timeout and the trial is recorded as a timeout.
func TestHooksUnderTrialTimeout(t *testing.T) {
	tests := []struct {
		name string
		c    lab.Controls
		want string
	}{
		{"prepare", lab.Controls{Prepare: []string{"true", "sleep 1005"}}, `prepare[1] "sleep 1005": exceeded trial_timeout of 2s`},
		{"cleanup", lab.Controls{Cleanup: []string{"sleep 1005 & sleep 1005"}}, `cleanup[0] "sleep 1005 & sleep 1005": exceeded trial_timeout of 2s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := setup(t, "true", func(e *lab.Experiment) { e.TrialTimeout = 2 })
			start := time.Now()
			r := trial(d, tt.c)
			if r.Status != lab.StatusTimeout || r.Reason != tt.want {
				t.Errorf("got %s %q, want timeout %q", r.Status, r.Reason, tt.want)
			}
			if el := time.Since(start); el > 2*time.Minute { // a hang: 1005 s sleeps left running
				t.Errorf("took %v", el)
			}
		})
	}
}

// TestLongLines: lines of any length on stdout either parse as what they
// are or fail the trial with a named reason, whatever the write sizes.
func TestLongLines(t *testing.T) {
	big := strings.Repeat("x", 73728)
	tests := []struct {
		name, out string
		want      map[string]float64
		err       string
	}{
		{"metric after a long line's tail", big + " PERFLAB_METRIC fake=1\nPERFLAB_METRIC real=2\n", map[string]float64{"real": 2}, ""},
		{"long line without newline", big + "PERFLAB_METRIC fake=1", map[string]float64{}, ""},
		{"long leading blanks", strings.Repeat(" ", 100000) + "PERFLAB_METRIC spaced=3\n", map[string]float64{"spaced": 3}, ""},
		{"overlong metric line", "ok\nPERFLAB_METRIC long=1 unit=" + big + "\nPERFLAB_METRIC real=2\n", nil, "stdout line 2: PERFLAB_METRIC line longer than 65536 bytes"},
		{"metric line at the limit", "PERFLAB_METRIC edge=4 unit=" + strings.Repeat("u", maxMetricLine-len("PERFLAB_METRIC edge=4 unit=")) + "\n", map[string]float64{"edge": 4}, ""},
		{"prefix split by a write", "PERFLAB_MET" + "RIC s=5\nPERFLAB_METRICS=6\n", map[string]float64{"s": 5}, ""},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 7, 4096, 1 << 20} {
			c := &lineCollector{}
			for s := tt.out; len(s) > 0; {
				n := min(chunk, len(s))
				c.Write([]byte(s[:n]))
				s = s[n:]
			}
			c.flush()
			if tt.err != "" {
				if c.err == nil || c.err.Error() != tt.err {
					t.Errorf("%s (writes of %d): error %v, want %q", tt.name, chunk, c.err, tt.err)
				}
				continue
			}
			got := map[string]float64{}
			for _, m := range c.metrics {
				got[m.Name] = m.Value
			}
			if c.err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%s (writes of %d): %v %v, want %v", tt.name, chunk, got, c.err, tt.want)
			}
		}
	}
	// The case, through a real process.
	d := setup(t, `head -c 73728 /dev/zero | tr '\0' x; echo " PERFLAB_METRIC fake=1"; echo PERFLAB_METRIC real=2`, nil)
	r := trial(d, lab.Controls{})
	metric(t, r, "real")
	for _, m := range r.Metrics {
		if m.Name == "fake" {
			t.Errorf("the tail of a long line was parsed as a metric line")
		}
	}
}

// TestLongTCPLines: on the metrics port, a metric line longer than the
// reader's buffer but within the limit parses; one over the limit fails the
// trial with a named reason.
func TestLongTCPLines(t *testing.T) {
	send := func(lines string) string {
		return `python3 -c '
import os, socket
h, p = os.environ["PERFLAB_METRICS_ADDR"].rsplit(":", 1)
s = socket.create_connection((h, int(p)))
s.sendall(os.environ["PERFLAB_METRICS_TOKEN"].encode() + b"\n" + ` + lines + `)
s.close()'`
	}
	d := setup(t, send(`b"PERFLAB_METRIC a=1 unit=" + b"u" * 20000 + b"\nPERFLAB_METRIC b=2\n"`), nil)
	r := trial(d, lab.Controls{})
	if a, b := metric(t, r, "a"), metric(t, r, "b"); a != 1 || b != 2 {
		t.Errorf("a=%v b=%v", a, b)
	}
	d = setup(t, send(`b"PERFLAB_METRIC a=1 unit=" + b"u" * 70000 + b"\nPERFLAB_METRIC b=1\n"`), nil)
	r = trial(d, lab.Controls{})
	if want := "PERFLAB_METRICS_ADDR line 2: line longer than 65536 bytes"; r.Status != lab.StatusFailed || r.Reason != want {
		t.Errorf("got %s %q, want failed %q", r.Status, r.Reason, want)
	}
}

// TestHasEnvEntry pins the environ matching: whole entries only.
func TestHasEnvEntry(t *testing.T) {
	mark := []byte("PERFLAB_RUN_ID=ab")
	for env, want := range map[string]bool{
		"A=1\x00PERFLAB_RUN_ID=ab\x00":   true,
		"PERFLAB_RUN_ID=ab":              true,
		"PERFLAB_RUN_ID=abc\x00":         false,
		"X_PERFLAB_RUN_ID=ab\x00":        false,
		"W=PERFLAB_RUN_ID=ab\x00B=2\x00": false,
		"":                               false,
	} {
		if got := hasEnvEntry([]byte(env), mark); got != want {
			t.Errorf("hasEnvEntry(%q) = %v", env, got)
		}
	}
}

// TestOtherWatchdogIsNotALeftover: the watchdog of an earlier run (Close
// does not wait for it to exit) is told apart from a leftover of this
// run's trials, which carries the run's id; anything else is not a
// watchdog.
func TestOtherWatchdogIsNotALeftover(t *testing.T) {
	r := &reaper{id: "test", mark: []byte(RunIDEnv + "=test")}
	start := func(name string, env []string) int {
		t.Helper()
		rd, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		cmd := exec.Command("sh", "-c", "read -r line", name, "x")
		cmd.Env, cmd.Stdin = env, rd
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wr.Close(); cmd.Wait() })
		// exec has closed its pipe a moment before the kernel fills in the
		// new program's arguments: wait for them (a real watchdog is old).
		pid := cmd.Process.Pid
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Millisecond) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(b), name) {
				return pid
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d never showed its arguments", pid)
			}
		}
	}
	path := "PATH=" + os.Getenv("PATH")
	for _, tc := range []struct {
		name string
		env  []string
		want bool
	}{
		{watchdogName, []string{path}, true},
		{watchdogName, []string{path, string(r.mark)}, false}, // a trial's process named so
		{"something-else", []string{path}, false},
	} {
		pid := start(tc.name, tc.env)
		if got := r.otherWatchdog(pid); got != tc.want {
			t.Errorf("%s with env %q: otherWatchdog = %v, want %v", tc.name, tc.env, got, tc.want)
		}
	}
}
