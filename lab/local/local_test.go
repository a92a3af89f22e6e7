package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perflab/perflab/internal/checktest"
	"github.com/perflab/perflab/lab"
)

// setup returns a set-up local device for an experiment whose control and
// treatment both run script with sh -c.
func setup(t *testing.T, script string, mod func(*lab.Experiment)) *Device {
	t.Helper()
	exp := &lab.Experiment{Device: "local", Trials: 1, Order: lab.OrderFixed, Builds: map[string]lab.Build{
		lab.ArmControl:   {Command: []string{"sh", "-c", script}, Dir: t.TempDir()},
		lab.ArmTreatment: {Command: []string{"sh", "-c", script}, Dir: t.TempDir()},
	}}
	if mod != nil {
		mod(exp)
	}
	d := New()
	if _, err := d.Setup(context.Background(), exp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func trial(d *Device, c lab.Controls) lab.TrialResult {
	d.mu.Lock()
	exp := d.exp
	d.mu.Unlock()
	b := exp.Builds[lab.ArmControl]
	return d.RunTrial(context.Background(), lab.TrialRequest{Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b, Controls: c, Metrics: exp.Metrics})
}

func metric(t *testing.T, r lab.TrialResult, name string) float64 {
	t.Helper()
	if r.Status != lab.StatusOK {
		t.Fatalf("trial %s: %s", r.Status, r.Reason)
	}
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value
		}
	}
	t.Fatalf("no metric %s in %+v", name, r.Metrics)
	return 0
}

func TestProcessMetrics(t *testing.T) {
	// About 30 ms of user CPU.
	d := setup(t, `i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done`, nil)
	r := trial(d, lab.Controls{})
	wall, user := metric(t, r, MetricWall), metric(t, r, MetricUser)
	if wall <= 0 || user <= 0 || user > wall*float64(runtime.NumCPU())+5 {
		t.Errorf("wall %v ms, user %v ms", wall, user)
	}
	metric(t, r, MetricSys)
	if len(r.Metrics) != 3 {
		t.Errorf("default metrics %+v, want wall, user, sys", r.Metrics)
	}
	for _, m := range r.Metrics {
		if m.Better != "lower" || m.Unit == "" {
			t.Errorf("metric %+v lacks unit or direction", m)
		}
	}
}

// TestMaxRSS checks that max_rss_kb is the command's own peak, not
// perflab's (which the kernel would charge to every child it starts).
func TestMaxRSS(t *testing.T) {
	if findGNUTime() == "" {
		t.Skip("GNU time not installed (apt-get install time)")
	}
	rss := func(script string) float64 {
		d := setup(t, script, func(e *lab.Experiment) { e.Metrics = []string{MetricMaxRSS, MetricWall} })
		return metric(t, trial(d, lab.Controls{}), MetricMaxRSS)
	}
	small := rss("true")
	big := rss(`python3 -c 'b = bytearray(80_000_000); b[::4096] = b"x" * len(b[::4096])'`)
	var self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	if small > 8000 || small >= float64(self.Maxrss) {
		t.Errorf("max_rss_kb of true: %v kB (this test process peaked at %d kB)", small, self.Maxrss)
	}
	if big < 80000 || big > 200000 {
		t.Errorf("max_rss_kb of an 80 MB allocation: %v kB", big)
	}
}

func TestReportedMetricsStdoutAndTCP(t *testing.T) {
	script := `echo "some log"; echo "PERFLAB_METRIC startup_ms=12.5 unit=ms"
python3 -c '
import os, socket
h, p = os.environ["PERFLAB_METRICS_ADDR"].rsplit(":", 1)
s = socket.create_connection((h, int(p)))
s.sendall(os.environ["PERFLAB_METRICS_TOKEN"].encode() + b"\n")
s.sendall(b"PERFLAB_METRIC fps=58.5 unit=fps better=higher\n")
s.close()
'
printf "PERFLAB_METRIC last=3"`
	d := setup(t, script, nil)
	for i := 0; i < 3; i++ { // the listener serves trial after trial
		r := trial(d, lab.Controls{})
		if v := metric(t, r, "startup_ms"); v != 12.5 {
			t.Errorf("startup_ms %v", v)
		}
		if v := metric(t, r, "fps"); v != 58.5 {
			t.Errorf("fps %v", v)
		}
		if v := metric(t, r, "last"); v != 3 {
			t.Errorf("last line without newline: %v", v)
		}
		for _, m := range r.Metrics {
			if m.Name == "fps" && (m.Better != "higher" || m.Unit != "fps") {
				t.Errorf("fps metric %+v", m)
			}
		}
	}
}

func TestRequestedMetricsFilterAndRequire(t *testing.T) {
	d := setup(t, `echo PERFLAB_METRIC a=1; echo PERFLAB_METRIC b=2`, func(e *lab.Experiment) { e.Metrics = []string{"b", "wall_ms"} })
	r := trial(d, lab.Controls{})
	if len(r.Metrics) != 2 || r.Metrics[0].Name != "b" || r.Metrics[1].Name != "wall_ms" {
		t.Errorf("metrics %+v, want b then wall_ms only", r.Metrics)
	}
	d = setup(t, `echo PERFLAB_METRIC a=1`, func(e *lab.Experiment) { e.Metrics = []string{"b"} })
	if r := trial(d, lab.Controls{}); r.Status != lab.StatusFailed || !strings.Contains(r.Reason, "requested metric b was not reported") {
		t.Errorf("missing metric: %+v", r)
	}
}

func TestFailedTrials(t *testing.T) {
	tests := []struct {
		name, script string
		timeout      float64
		status, want string
	}{
		{"exit code", `echo oops >&2; exit 3`, 0, lab.StatusFailed, "exit status 3: oops"},
		{"malformed stdout", `echo "PERFLAB_METRIC x=fast"`, 0, lab.StatusFailed, `malformed metric line 1 on stdout: metric x: value "fast" is not a finite number`},
		{"malformed tcp", `python3 -c 'import os,socket; h,p=os.environ["PERFLAB_METRICS_ADDR"].rsplit(":",1); s=socket.create_connection((h,int(p))); s.sendall(os.environ["PERFLAB_METRICS_TOKEN"].encode()+b"\nhello\n")'`, 0, lab.StatusFailed, "PERFLAB_METRICS_ADDR line 2: not a PERFLAB_METRIC line"},
		{"connection held open", `bash -c 'exec 3<>/dev/tcp/${PERFLAB_METRICS_ADDR%:*}/${PERFLAB_METRICS_ADDR##*:}; printf "%s\n" "$PERFLAB_METRICS_TOKEN" >&3; setsid sleep 30 <&3 >&3 & while [ "$(cut -d" " -f6 /proc/$!/stat)" != $! ]; do sleep 0.01; done'`, 0, lab.StatusFailed, "PERFLAB_METRICS_ADDR line 2: connection still open 2s after the command exited"},
		{"reported twice", `echo PERFLAB_METRIC x=1; echo PERFLAB_METRIC x=2`, 0, lab.StatusFailed, "metric x reported twice"},
		{"reserved name", `echo PERFLAB_METRIC wall_ms=1`, 0, lab.StatusFailed, "name reserved"},
		{"timeout", `sleep 1000 & sleep 1000; wait`, 0.3, lab.StatusTimeout, "exceeded trial_timeout of 0.3s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := setup(t, tt.script, func(e *lab.Experiment) { e.TrialTimeout = tt.timeout })
			start := time.Now()
			r := trial(d, lab.Controls{})
			if r.Status != tt.status || !strings.Contains(r.Reason, tt.want) {
				t.Errorf("got %s %q, want %s %q", r.Status, r.Reason, tt.status, tt.want)
			}
			// Children left alive would hold the output open for 1000 s;
			// a minute only allows for a loaded host.
			if tt.timeout > 0 && time.Since(start) > time.Minute {
				t.Errorf("timeout took %v: children not killed", time.Since(start))
			}
		})
	}
}

func TestCancelKillsProcessGroupAndCleansUp(t *testing.T) {
	d := setup(t, `sleep 1000 & sleep 1000; wait`, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	b := d.exp.Builds[lab.ArmControl]
	mark := filepath.Join(t.TempDir(), "cleaned")
	c := lab.Controls{Cleanup: []string{"touch " + mark}}
	r := d.RunTrial(ctx, lab.TrialRequest{Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b, Controls: c})
	// Children left alive would hold the trial for 1000 s; a minute only
	// allows for a loaded host.
	if r.Status != lab.StatusFailed || r.Reason != "cancelled" || time.Since(start) > time.Minute {
		t.Errorf("got %+v after %v", r, time.Since(start))
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("cleanup did not run after cancel: %v", err)
	}
}

// TestCancelAcrossTrialsOfOneRun: one watch on the run's context serves
// all its trials: a cancel during a later trial kills that trial's group,
// a trial begun after the cancel is killed at once, and a new run's context
// is watched in its turn.
func TestCancelAcrossTrialsOfOneRun(t *testing.T) {
	d := setup(t, `if [ "$PERFLAB_TRIAL" -ge 2 ]; then sleep 1000 & sleep 1000; wait; fi`, nil)
	b := d.exp.Builds[lab.ArmControl]
	run := func(ctx context.Context, i int) lab.TrialResult {
		return d.RunTrial(ctx, lab.TrialRequest{Index: i, Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b})
	}
	for round, ctx := range []context.Context{context.Background(), nil, nil} {
		var cancel context.CancelFunc
		if ctx == nil {
			ctx, cancel = context.WithCancel(context.Background())
		}
		for i := 0; i < 2; i++ {
			if r := run(ctx, i); r.Status != lab.StatusOK {
				t.Fatalf("round %d trial %d: %+v", round, i, r)
			}
		}
		if cancel == nil {
			continue
		}
		time.AfterFunc(200*time.Millisecond, cancel)
		for i, want := range []string{"cancelled during the trial", "cancelled before it"} {
			start := time.Now()
			r := run(ctx, 2)
			// A group left alive would hold the trial for 1000 s; a
			// minute only allows for a loaded host.
			if r.Status != lab.StatusFailed || r.Reason != "cancelled" || time.Since(start) > time.Minute {
				t.Errorf("round %d, trial %d %s: got %+v after %v", round, 2+i, want, r, time.Since(start))
			}
		}
	}
}

func TestPrepareCleanupAndEnv(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	d := setup(t, `echo "run $PERFLAB_ARM $PERFLAB_TRIAL $MYVAR" >> `+log, func(e *lab.Experiment) {
		b := e.Builds[lab.ArmControl]
		b.Env = map[string]string{"MYVAR": "x1"}
		e.Builds[lab.ArmControl] = b
	})
	c := lab.Controls{Prepare: []string{"echo prepare >> " + log}, Cleanup: []string{"echo cleanup >> " + log}}
	if r := trial(d, c); r.Status != lab.StatusOK {
		t.Fatal(r.Reason)
	}
	got, _ := os.ReadFile(log)
	if string(got) != "prepare\nrun control 0 x1\ncleanup\n" {
		t.Errorf("log %q", got)
	}
	c.Prepare = []string{"echo no >&2; false"}
	if r := trial(d, c); r.Status != lab.StatusFailed || !strings.Contains(r.Reason, `prepare[0] "echo no >&2; false": exit status 1: no`) {
		t.Errorf("failing prepare: %+v", r)
	}
	// A server started in the background by prepare does not hold the
	// trial up (it keeps the hook's output open for 1000 s; a minute only
	// allows for a loaded host).
	start := time.Now()
	c.Prepare, c.Cleanup = []string{"sleep 1000 &"}, nil
	if r := trial(d, c); r.Status != lab.StatusOK || time.Since(start) > time.Minute {
		t.Errorf("prepare starting a background process: %+v after %v", r, time.Since(start))
	}
	c.Prepare, c.Cleanup = nil, []string{"exit 4"}
	if r := trial(d, c); r.Status != lab.StatusFailed || !strings.Contains(r.Reason, "cleanup[0]") {
		t.Errorf("failing cleanup: %+v", r)
	}
}

func TestStateDirRestoredBeforeEachTrial(t *testing.T) {
	state := t.TempDir()
	os.WriteFile(filepath.Join(state, "db"), []byte("v1"), 0o600)
	os.Mkdir(filepath.Join(state, "sub"), 0o755)
	os.Symlink("db", filepath.Join(state, "link"))
	// Each trial appends to db, adds a file and reports db's size.
	script := `cd "$STATE" && echo more >> db && touch "new$PERFLAB_TRIAL" && echo PERFLAB_METRIC size=$(wc -c < db) && echo PERFLAB_METRIC files=$(ls | wc -l)`
	d := setup(t, script, func(e *lab.Experiment) {
		for k, b := range e.Builds {
			b.Env = map[string]string{"STATE": state}
			e.Builds[k] = b
		}
		e.Controls.StateDir = state
	})
	c := lab.Controls{StateDir: state}
	for i := 0; i < 3; i++ {
		r := trial(d, c)
		if size, files := metric(t, r, "size"), metric(t, r, "files"); size != 7 || files != 4 {
			t.Errorf("trial %d saw db of %v bytes and %v files: state not restored", i, size, files)
		}
	}
	d.Close()
	got, _ := os.ReadFile(filepath.Join(state, "db"))
	entries, _ := os.ReadDir(state)
	if string(got) != "v1" || len(entries) != 3 {
		t.Errorf("after Close: db %q, %d entries; want the original state back", got, len(entries))
	}
	if l, err := os.Readlink(filepath.Join(state, "link")); err != nil || l != "db" {
		t.Errorf("symlink not kept: %q %v", l, err)
	}
	if st, _ := os.Stat(filepath.Join(state, "db")); st.Mode().Perm() != 0o600 {
		t.Errorf("mode not kept: %v", st.Mode())
	}
}

func TestASLROffAndPinCPU(t *testing.T) {
	// personality 0x0040000 is ADDR_NO_RANDOMIZE.
	script := `echo PERFLAB_METRIC personality=$((0x$(cat /proc/self/personality)))
echo PERFLAB_METRIC cpus=$(grep Cpus_allowed_list /proc/self/status | awk '{print $2}' | tr -d -c '0-9' )`
	d := setup(t, script, nil)
	off, pin := false, 0
	r := trial(d, lab.Controls{ASLR: &off, PinCPU: &pin})
	if p := int(metric(t, r, "personality")); p&0x0040000 == 0 {
		t.Errorf("personality %#x: ASLR still on", p)
	}
	if c := metric(t, r, "cpus"); c != 0 {
		t.Errorf("allowed CPUs %v, want only CPU 0", c)
	}
	r = trial(d, lab.Controls{})
	if p := int(metric(t, r, "personality")); p&0x0040000 != 0 {
		t.Errorf("personality %#x: ASLR off without asking", p)
	}
	big := runtime.NumCPU() + 3
	if r := trial(d, lab.Controls{PinCPU: &big}); r.Status != lab.StatusFailed || !strings.Contains(r.Reason, "does not exist") {
		t.Errorf("pinning to a missing CPU: %+v", r)
	}
}

func TestCachegrindMetric(t *testing.T) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind not installed (test.sh installs it)")
	}
	small := setup(t, "true", func(e *lab.Experiment) { e.Controls.Cachegrind = true })
	d := setup(t, `i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done`, func(e *lab.Experiment) { e.Metrics = []string{"cachegrind"} })
	a, b := metric(t, trial(small, lab.Controls{Cachegrind: true}), MetricCachegrind), metric(t, trial(d, lab.Controls{}), MetricCachegrind)
	if a <= 0 || b <= a*2 {
		t.Errorf("cachegrind cost: true %v, a shell loop %v", a, b)
	}
	b2 := metric(t, trial(d, lab.Controls{}), MetricCachegrind)
	if diff := (b2 - b) / b; diff > 0.02 || diff < -0.02 {
		t.Errorf("cachegrind not stable across trials: %v vs %v", b, b2)
	}
	// wall_ms under valgrind would be meaningless: refused with a reason.
	exp := &lab.Experiment{Builds: d.exp.Builds, Metrics: []string{"wall_ms", "cachegrind"}}
	if _, err := New().Setup(context.Background(), exp); err == nil || !strings.Contains(err.Error(), "wall_ms cannot be measured in the same trial as cachegrind") {
		t.Errorf("Setup: %v", err)
	}
}

func TestCachegrindCost(t *testing.T) {
	// The summary of /bin/true under the fixed cache sizes.
	c := cachegrindCounts{"Ir": 129975, "I1mr": 1091, "ILmr": 1072, "Dr": 29817, "D1mr": 1226, "DLmr": 1019, "Dw": 10266, "D1mw": 343, "DLmw": 311}
	ram := 1072.0 + 1019 + 311
	ll := 1091.0 + 1226 + 343 - ram
	l1 := 129975.0 + 29817 + 10266 - (1091 + 1226 + 343)
	if got, want := c.Cost(), l1+5*ll+35*ram; got != want {
		t.Errorf("cost %v, want %v", got, want)
	}
}

func TestInstructionsMetric(t *testing.T) {
	d := NewProbed()
	exp := &lab.Experiment{Builds: map[string]lab.Build{
		lab.ArmControl: {Command: []string{"true"}}, lab.ArmTreatment: {Command: []string{"true"}},
	}, Metrics: []string{"instructions"}}
	_, err := d.Setup(context.Background(), exp)
	defer d.Close()
	if !d.perfStatus().ok {
		// This host cannot count: the error must say so and point elsewhere.
		if err == nil || !strings.Contains(err.Error(), "instructions") || !strings.Contains(err.Error(), "cachegrind") {
			t.Fatalf("Setup on a host without counters: %v", err)
		}
		if !strings.Contains(strings.Join(d.Info().Notes, "\n"), "instructions: ") {
			t.Errorf("Info notes do not explain instructions: %v", d.Info().Notes)
		}
		t.Logf("perf unavailable here, as reported: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	r := d.RunTrial(context.Background(), lab.TrialRequest{Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: exp.Builds[lab.ArmControl], Metrics: exp.Metrics})
	if n := metric(t, r, MetricInstructions); n < 1000 {
		t.Errorf("instructions %v", n)
	}
}

func TestReadPerfInstructions(t *testing.T) {
	dir := t.TempDir()
	tests := map[string]string{
		"# started on x\n\n123456,,instructions:u,100,100.00,,\n": "",
		"<not supported>,,instructions:u,0,100.00,,\n":            "<not supported>",
		"<not counted>,,instructions:u,0,0.00,,\n":                "<not counted>",
		"": "no instructions line",
	}
	for in, want := range tests {
		p := filepath.Join(dir, "p.csv")
		os.WriteFile(p, []byte(in), 0o644)
		n, err := readPerfInstructions(p)
		if want == "" {
			if err != nil || n != 123456 {
				t.Errorf("%q: %v %v", in, n, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

func TestSetupErrors(t *testing.T) {
	tests := []struct {
		name string
		exp  lab.Experiment
		want string
	}{
		{"no command", lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: {}, lab.ArmTreatment: {Command: []string{"true"}}}}, "builds.control.command: empty"},
		{"not found", lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: {Command: []string{"no-such-cmd-xyz"}}, lab.ArmTreatment: {Command: []string{"true"}}}}, `"no-such-cmd-xyz" not found in PATH`},
		{"phone control", lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}}, lab.ArmTreatment: {Command: []string{"true"}}}, Controls: lab.Controls{ClockReset: true}}, "controls.clock_reset: the local device cannot do this"},
		{"NUL in env", lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}, Env: map[string]string{"A": "x\x00y"}}, lab.ArmTreatment: {Command: []string{"true"}}}}, `builds.control.env."A": holds a NUL byte`},
		{"state dir missing", lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: {Command: []string{"true"}}, lab.ArmTreatment: {Command: []string{"true"}}}, Controls: lab.Controls{StateDir: "/no/such/dir"}}, "controls.state_dir"},
	}
	for _, tt := range tests {
		d := New()
		_, err := d.Setup(context.Background(), &tt.exp)
		d.Close()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// CheckBuilds refuses exactly the builds Setup refuses, with the same
// error, and passes those it runs.
func TestCheckBuildsMatchesSetup(t *testing.T) {
	ok := lab.Build{Command: []string{"true"}}
	tests := []struct {
		name    string
		control lab.Build
		want    string // "" for a build the host runs
	}{
		{"command", ok, ""},
		{"no command", lab.Build{}, "builds.control.command: empty"},
		{"app", lab.Build{App: "feed"}, "builds.control.command: empty"},
		{"app and command", lab.Build{App: "feed", Command: []string{"true"}}, "builds.control: app/apk/package are for sim and adb devices"},
		{"no such dir", lab.Build{Command: []string{"true"}, Dir: "/no/such/dir"}, "builds.control.dir: /no/such/dir is not a directory"},
		{"not found", lab.Build{Command: []string{"no-such-cmd-xyz"}}, `builds.control.command: "no-such-cmd-xyz" not found in PATH`},
		{"NUL in env value", lab.Build{Command: []string{"true"}, Env: map[string]string{"A": "x\x00y"}}, `builds.control.env."A": holds a NUL byte`},
		{"NUL in env name", lab.Build{Command: []string{"true"}, Env: map[string]string{"A\x00B": "x"}}, `builds.control.env."A\x00B": holds a NUL byte`},
		{"env", lab.Build{Command: []string{"true"}, Env: map[string]string{"A": "x"}}, ""},
	}
	for _, tt := range tests {
		exp := &lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: tt.control, lab.ArmTreatment: ok}}
		d := New()
		cerr := d.CheckBuilds(exp)
		_, serr := d.Setup(context.Background(), exp)
		d.Close()
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
	}
}

// CheckMetrics refuses exactly the metrics Setup refuses by name, with the
// same error, and passes a built-in one and one the command reports; what
// needs a tool (perf, GNU time, valgrind) is left to Setup.
func TestCheckMetricsMatchesSetup(t *testing.T) {
	ok := lab.Build{Command: []string{"true"}}
	tests := []struct {
		name       string
		metrics    []string
		cachegrind bool   // controls.cachegrind
		want       string // "" for metrics the host gives
	}{
		{"built-in", []string{"wall_ms", "user_ms"}, false, ""},
		{"reported", []string{"frames"}, false, ""},
		{"typo", []string{"wall_ms", "usr_ms"}, false, `metrics[1]: "usr_ms" is not measured here; did you mean "user_ms"?`},
		{"wall_ms with cachegrind", []string{"wall_ms", "cachegrind"}, false, "metrics: wall_ms cannot be measured in the same trial as cachegrind"},
		{"sys_ms under controls.cachegrind", []string{"sys_ms"}, true, "metrics: sys_ms cannot be measured in the same trial as cachegrind"},
	}
	for _, tt := range tests {
		exp := &lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: ok, lab.ArmTreatment: ok}, Metrics: tt.metrics}
		exp.Controls.Cachegrind = tt.cachegrind
		d := New()
		cerr := d.CheckMetrics(exp)
		_, serr := d.Setup(context.Background(), exp)
		d.Close()
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
	}
}

// BenchmarkTrialTrue measures the harness cost of one trial of /bin/true.
func BenchmarkTrialTrue(b *testing.B) {
	exp := &lab.Experiment{Builds: map[string]lab.Build{
		lab.ArmControl: {Command: []string{"/bin/true"}}, lab.ArmTreatment: {Command: []string{"/bin/true"}},
	}}
	d := New()
	if _, err := d.Setup(context.Background(), exp); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	req := lab.TrialRequest{Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: exp.Builds[lab.ArmControl]}
	for b.Loop() {
		if r := d.RunTrial(context.Background(), req); r.Status != lab.StatusOK {
			b.Fatal(r.Reason)
		}
	}
}

// TestMetricsOverTCPShortAndLong covers both ways TCP metric lines are
// collected: a trial shorter than acceptDelay (its connection is taken from
// the backlog after it exits) and a long one writing far more than the
// socket buffers hold (accepted and read while it runs).
func TestMetricsOverTCPShortAndLong(t *testing.T) {
	short := setup(t, `bash -c 'printf "%s\nPERFLAB_METRIC quick=7\n" "$PERFLAB_METRICS_TOKEN" > /dev/tcp/${PERFLAB_METRICS_ADDR%:*}/${PERFLAB_METRICS_ADDR##*:}'`, nil)
	for i := 0; i < 5; i++ {
		if v := metric(t, trial(short, lab.Controls{}), "quick"); v != 7 {
			t.Errorf("quick = %v", v)
		}
	}
	long := setup(t, `python3 -c '
import os, socket
h, p = os.environ["PERFLAB_METRICS_ADDR"].rsplit(":", 1)
s = socket.create_connection((h, int(p)))
s.sendall(os.environ["PERFLAB_METRICS_TOKEN"].encode() + b"\n" * 8000000 + b"PERFLAB_METRIC big=1\n")
s.close()
'`, func(e *lab.Experiment) { e.TrialTimeout = 20 })
	// The accept delay's timer serves every trial: each long trial in a
	// row, and a short one after them, gets its own lines.
	for i := 0; i < 2; i++ {
		if v := metric(t, trial(long, lab.Controls{}), "big"); v != 1 {
			t.Errorf("long trial %d: big = %v", i, v)
		}
	}
	if v := metric(t, trial(short, lab.Controls{}), "quick"); v != 7 {
		t.Errorf("short trial after long ones: quick = %v", v)
	}
}

// TestWatchdogEndsAfterClose: Close does not wait for the watchdog, but it
// reads perflab's goodbye, exits and is reaped.
func TestWatchdogEndsAfterClose(t *testing.T) {
	d := setup(t, "true", nil)
	d.mu.Lock()
	wd := d.reaper.watchdog
	d.mu.Unlock()
	if wd == nil {
		t.Skip("no watchdog on this host: " + d.reaper.note)
	}
	pid := wd.Process.Pid
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute) // only catches a hang
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("watchdog %d still there 2 minutes after Close", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLeftoverProcessesAreKilled: a background process a trial leaves
// behind is ended with the trial, so it cannot print into the next one.
func TestLeftoverProcessesAreKilled(t *testing.T) {
	// Trial 0 leaves a process that prints 0.3 s later, in the middle of
	// trial 1 (which takes 0.6 s).
	d := setup(t, `if [ "$PERFLAB_TRIAL" = 0 ]; then (sleep 0.3; echo PERFLAB_METRIC late=1) & else sleep 0.6; fi; echo PERFLAB_METRIC x=1`, nil)
	b := d.exp.Builds[lab.ArmControl]
	r0 := d.RunTrial(context.Background(), lab.TrialRequest{Index: 0, Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b})
	r1 := d.RunTrial(context.Background(), lab.TrialRequest{Index: 1, Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: b})
	for i, r := range []lab.TrialResult{r0, r1} {
		metric(t, r, "x")
		for _, m := range r.Metrics {
			if m.Name == "late" {
				t.Errorf("trial %d got the leftover's metric", i)
			}
		}
	}
}

// CheckControls refuses exactly the controls Setup refuses, with the same
// error, and passes those it applies; a trial given such controls live
// (the workbench toggles them) fails with that error too, where the control
// is one a trial applies.
func TestCheckControlsMatchesSetup(t *testing.T) {
	ok := lab.Build{Command: []string{"true"}}
	pin := lab.MaxCPU // no host has it; without taskset it is refused too
	tests := []struct {
		name     string
		controls lab.Controls
		want     string // "" for controls the host applies
		live     bool   // a trial checks it too
	}{
		{"none", lab.Controls{}, "", false},
		{"reset commands", lab.Controls{Prepare: []string{"true"}, Cleanup: []string{"true"}, StateDir: t.TempDir(), Governor: []byte(`"stock"`)}, "", false},
		{"tmpfs", lab.Controls{Tmpfs: true}, "controls.tmpfs: the local device cannot do this", true},
		{"kill_app and drop_caches", lab.Controls{KillApp: true, DropCaches: true}, "controls.drop_caches: the local device cannot do this", true},
		{"pin_cpu", lab.Controls{PinCPU: &pin}, "controls.pin_cpu: ", true},
		{"state_dir", lab.Controls{StateDir: "/no/such/dir"}, "controls.state_dir: ", false},
		{"state_dir a file", lab.Controls{StateDir: "/dev/null"}, "controls.state_dir: /dev/null is not a directory", false},
		{"governor", lab.Controls{Governor: []byte(`"nosuch"`)}, `controls.governor: unknown profile "nosuch"`, false},
	}
	for _, tt := range tests {
		exp := &lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: ok, lab.ArmTreatment: ok}, Controls: tt.controls}
		d := New()
		cerr := d.CheckControls(exp)
		_, serr := d.Setup(context.Background(), exp)
		d.Close()
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
		if !tt.live || cerr == nil {
			continue
		}
		d = New()
		if _, err := d.Setup(context.Background(), &lab.Experiment{Builds: exp.Builds}); err != nil {
			t.Fatal(err)
		}
		r := d.RunTrial(context.Background(), lab.TrialRequest{Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: ok, Controls: tt.controls})
		d.Close()
		if r.Status != lab.StatusFailed || r.Reason != cerr.Error() {
			t.Errorf("%s live: trial %s %q, want failed %q", tt.name, r.Status, r.Reason, cerr)
		}
	}
}

func TestWorkerCPUs(t *testing.T) {
	for _, tc := range []struct{ n, k, ncpu, lo, hi int }{
		{1, 1, 8, 0, 7}, {1, 4, 8, 0, 1}, {4, 4, 8, 6, 7}, {2, 3, 8, 2, 3},
		{1, 2, 2, 0, 0}, {2, 2, 2, 1, 1}, {3, 4, 2, 0, 0}, {4, 4, 2, 1, 1},
	} {
		lo, hi := WorkerCPUs(tc.n, tc.k, tc.ncpu)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("WorkerCPUs(%d, %d, %d) = %d-%d, want %d-%d", tc.n, tc.k, tc.ncpu, lo, hi, tc.lo, tc.hi)
		}
	}
}
