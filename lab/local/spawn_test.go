package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestRunDirectFailuresReadAsOSExec: runDirect's failures say what
// os/exec says for the same command, so trial reasons did not change
// when trials stopped using os/exec.
func TestRunDirectFailuresReadAsOSExec(t *testing.T) {
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	files := [3]*os.File{devnull, devnull, devnull}
	r := &reaper{}
	tests := []struct {
		name string
		argv []string
	}{
		{"exit status", []string{"sh", "-c", "exit 3"}},
		{"killed", []string{"sh", "-c", "kill -KILL $$"}},
		{"terminated", []string{"sh", "-c", "kill -TERM $$"}},
		{"success", []string{"true"}},
		{"not found in PATH", []string{"perflab-no-such-command"}},
		{"no such file", []string{"/nonexistent/perflab"}},
		{"not executable", []string{os.DevNull}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := exec.Command(tt.argv[0], tt.argv[1:]...).Run()
			path, err := (&Device{}).lookCommand(tt.argv[0])
			if err == nil {
				var st exitState
				var started bool
				st, started, err = r.runDirect(path, tt.argv, os.Environ(), "", files, nil)
				if err == nil && started {
					err = st.err()
				}
			}
			if (err == nil) != (want == nil) || err != nil && err.Error() != want.Error() {
				t.Errorf("runDirect: %v; os/exec: %v", err, want)
			}
		})
	}
}

// TestDedupEnvAsOSExec: the environment runDirect gets is the one os/exec
// would pass: the last entry of a name wins, in first-seen order.
func TestDedupEnvAsOSExec(t *testing.T) {
	for _, env := range [][]string{
		{},
		{"A=1"},
		{"A=1", "B=2", "A=3"},
		{"A=1", "B=2", "A=3", "B=", "C=x=y", "A=4"},
		{"NOEQUALS", "A=1", "NOEQUALS"},
		{"", "A=1", "", "=X=1", "=X=2"},
	} {
		cmd := exec.Command("true")
		cmd.Env = env
		want := cmd.Environ()
		got, err := dedupEnv(env)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("dedupEnv(%q) = %q, %v; os/exec %q", env, got, err, want)
		}
	}
	if _, err := dedupEnv([]string{"A=x\x00y"}); err == nil {
		t.Error("an entry with NUL was accepted")
	}
}

// TestTrialEnvHasEachNameOnce: the variables each trial sets win over the
// same names in perflab's own environment (perflab run inside a trial),
// and appear once.
func TestTrialEnvHasEachNameOnce(t *testing.T) {
	t.Setenv("PERFLAB_ARM", "outer")
	t.Setenv("PERFLAB_TRIAL", "outer")
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	d := setup(t, `env > `+out, nil)
	if r := trial(d, lab.Controls{}); r.Status != lab.StatusOK {
		t.Fatal(r.Reason)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, kv := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		count[k]++
		if k == "PERFLAB_ARM" && v != lab.ArmControl || k == "PERFLAB_TRIAL" && v != "0" {
			t.Errorf("%s=%s, want the trial's own", k, v)
		}
	}
	for _, k := range []string{"PERFLAB_ARM", "PERFLAB_TRIAL", "PERFLAB_WARMUP", lab.MetricsTokenEnv, lab.MetricsAddrEnv, RunIDEnv} {
		if count[k] != 1 {
			t.Errorf("%s appears %d times, want once", k, count[k])
		}
	}
}

// TestRunDirectProcessGroupAndDir: the command runs in its own process
// group, in the build's directory.
func TestRunDirectProcessGroupAndDir(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pid int
	st, started, err := (&reaper{}).runDirect("/bin/sh", []string{"sh", "-c", `pwd; cut -d' ' -f5 /proc/$$/stat`}, os.Environ(), dir, [3]*os.File{f, f, f}, func(p int) { pid = p })
	if err != nil || !started || st.err() != nil {
		t.Fatalf("runDirect: %v %v %v", err, started, st.err())
	}
	b, _ := os.ReadFile(out)
	lines := strings.Fields(string(b))
	if len(lines) != 2 || lines[0] != dir || lines[1] != strconv.Itoa(pid) {
		t.Errorf("output %q, want %s and process group %d", b, dir, pid)
	}
	if syscall.Getpgrp() == pid {
		t.Error("the command ran in perflab's own process group")
	}
}

// TestLookCommandOncePerRun: a command found in PATH is looked up once per
// device; one not found is looked up again (it may be installed meanwhile).
func TestLookCommandOncePerRun(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	d := &Device{}
	t.Setenv("PATH", dir1)
	if _, err := d.lookCommand("perflab-test-cmd"); err == nil {
		t.Fatal("found a command that is not there")
	}
	for _, dir := range []string{dir1, dir2} {
		if err := os.WriteFile(filepath.Join(dir, "perflab-test-cmd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.lookCommand("perflab-test-cmd")
	if want := filepath.Join(dir1, "perflab-test-cmd"); err != nil || got != want {
		t.Fatalf("after install: %q, %v; want %q", got, err, want)
	}
	t.Setenv("PATH", dir2)
	if got2, _ := d.lookCommand("perflab-test-cmd"); got2 != got {
		t.Errorf("looked up again: %q, want the first %q", got2, got)
	}
	if got, _ := d.lookCommand("./x"); got != "./x" {
		t.Errorf("a name with a slash: %q, want it as given", got)
	}
}
