package sshworker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sshworker"
	"github.com/perflab/perflab/lab/sshworker/sshdtest"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, id, dest, port, err string }{
		{in: "ssh://bench1", id: "ssh://bench1", dest: "bench1"},
		{in: "//bench1", id: "ssh://bench1", dest: "bench1"},
		{in: "ssh://ci@10.0.0.7:2222", id: "ssh://ci@10.0.0.7:2222", dest: "ci@10.0.0.7", port: "2222"},
		{in: "ssh://", err: "want ssh://"},
		{in: "ssh://a/b", err: "want ssh://"},
	} {
		got, err := sshworker.Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.ID != tc.id || got.Dest != tc.dest || got.Port != tc.port {
			t.Errorf("Parse(%q) = %+v, %v; want %s %s %s", tc.in, got, err, tc.id, tc.dest, tc.port)
		}
	}
}

func TestGoPlatform(t *testing.T) {
	for in, want := range map[string]string{"Linux x86_64\n": "linux_amd64", "Linux aarch64": "linux_arm64", "Darwin arm64": "darwin_arm64", "Plan9 x": "", "Linux": ""} {
		got, err := sshworker.GoPlatform(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("GoPlatform(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// setUp opens a worker on alias and sets it up for exp.
func setUp(t *testing.T, l *sshdtest.Lab, alias string, exp *lab.Experiment) (*sshworker.Device, map[string]string) {
	t.Helper()
	tg, err := sshworker.Parse("ssh://" + alias)
	if err != nil {
		t.Fatal(err)
	}
	d := sshworker.New(tg, sshworker.Options{Config: l.Config})
	t.Cleanup(func() { d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	evs, err := d.Setup(ctx, exp)
	if err != nil {
		t.Fatalf("setup %s: %v", alias, err)
	}
	return d, evs[0].Settings.Detail
}

// TestWorkerOverRealSSH runs trials on real sshd hosts, one reached
// through the other (ProxyJump): the build's files arrive (its
// platform's subfolder, a linked folder followed), the metrics come back,
// and Close leaves nothing on the host.
func TestWorkerOverRealSSH(t *testing.T) {
	l := sshdtest.Start(t, []string{"near", "far"}, "")
	l.Alias(t, "via-near", "far", "", "  ProxyJump near\n") // the far host through near

	files := t.TempDir()
	plat := runtime.GOOS + "_" + runtime.GOARCH
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "input.txt"), []byte("41\n"), 0o644)
	os.MkdirAll(filepath.Join(files, plat), 0o755)
	os.WriteFile(filepath.Join(files, plat, "run.sh"), []byte("#!/bin/sh\necho PERFLAB_METRIC answer=$(( $(cat testdata/input.txt) + 1 )) unit=count\necho PERFLAB_METRIC arm=$ARM\n"), 0o755)
	os.Symlink(data, filepath.Join(files, plat, "testdata"))
	exp := &lab.Experiment{Builds: map[string]lab.Build{
		lab.ArmControl:   {Command: []string{"./run.sh"}, Files: files, Env: map[string]string{"ARM": "1"}},
		lab.ArmTreatment: {Command: []string{"./run.sh"}, Files: files, Env: map[string]string{"ARM": "2"}},
	}}
	for _, alias := range []string{"near", "via-near"} {
		t.Run(alias, func(t *testing.T) {
			d, detail := setUp(t, l, alias, exp)
			if detail["platform"] != plat || !strings.HasPrefix(detail["worker_dir"], "/") {
				t.Fatalf("setup detail %v: want platform %s and the host's folder", detail, plat)
			}
			for i, arm := range []string{lab.ArmControl, lab.ArmTreatment} {
				res := d.RunTrial(context.Background(), lab.TrialRequest{Index: i, Arm: arm, Build: exp.Builds[arm]})
				if res.Status != lab.StatusOK || len(res.Metrics) != 2 || res.Metrics[0].Value != 42 || res.Metrics[1].Value != float64(i+1) {
					t.Fatalf("trial %s: %+v", arm, res)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(detail["worker_dir"]); !os.IsNotExist(err) {
				t.Errorf("the worker's folder %s is still there after Close (%v)", detail["worker_dir"], err)
			}
		})
	}
}

// TestWorkerFaults: a host that refuses the key is named with ssh's
// words; a host going away mid-trial is a lost device; an interrupted
// trial's processes on the host are killed.
func TestWorkerFaults(t *testing.T) {
	l := sshdtest.Start(t, []string{"h1", "h2"}, "")
	l.Alias(t, "stranger", "h1", sshdtest.NewKey(t), "") // a key h1 does not accept
	exp := &lab.Experiment{Builds: map[string]lab.Build{
		lab.ArmControl:   {Command: []string{"sh", "-c", "sleep 0.2; echo PERFLAB_METRIC x=1"}},
		lab.ArmTreatment: {Command: []string{"sh", "-c", "sleep 0.2; echo PERFLAB_METRIC x=1"}},
	}}

	t.Run("refused key", func(t *testing.T) {
		tg, _ := sshworker.Parse("ssh://stranger")
		d := sshworker.New(tg, sshworker.Options{Config: l.Config})
		defer d.Close()
		_, err := d.Setup(context.Background(), exp)
		if err == nil || !strings.Contains(err.Error(), "ssh://stranger: cannot connect") || !strings.Contains(err.Error(), "Permission denied") {
			t.Fatalf("setup with a key the host refuses: %v", err)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		d, _ := setUp(t, l, "h1", exp)
		mark := fmt.Sprintf("perflab-interrupt-%d", time.Now().UnixNano())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan lab.TrialResult)
		go func() {
			done <- d.RunTrial(ctx, lab.TrialRequest{Build: lab.Build{Command: []string{"sh", "-c", "sleep 300 " + mark + " || sleep 300"}}})
		}()
		waitFor(t, func() bool { return exec.Command("pgrep", "-f", "sleep 300 "+mark).Run() == nil })
		cancel()
		res := <-done
		if res.Status == lab.StatusOK {
			t.Fatalf("interrupted trial: %+v", res)
		}
		waitFor(t, func() bool { return exec.Command("pgrep", "-f", "sleep 300 "+mark).Run() != nil })
	})

	t.Run("host goes away", func(t *testing.T) {
		d, _ := setUp(t, l, "h2", exp)
		done := make(chan lab.TrialResult)
		go func() {
			done <- d.RunTrial(context.Background(), lab.TrialRequest{Build: lab.Build{Command: []string{"sleep", "30"}}})
		}()
		time.Sleep(300 * time.Millisecond)
		l.Stop("h2")
		res := <-done
		if !res.Lost || !strings.Contains(res.Reason, "ssh://h2") {
			t.Fatalf("trial on a host that went away: %+v; want it lost", res)
		}
	})
}

// waitFor polls cond for up to 30 s (a deadline that only catches hangs).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 30 s")
}
