package adb_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/internal/proctest"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/devlock"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/sim"
	"github.com/perflab/perflab/lab/simdevice"
)

// TestMain keeps the governor crash records these tests write out of the
// user's state directory.
func TestMain(m *testing.M) {
	if os.Getenv("PERFLAB_LOCK_HELPER_SERVER") != "" {
		os.Exit(m.Run()) // the helper shares its parent's state directory
	}
	dir, err := os.MkdirTemp("", "perflab-adb-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestGovernorLockHelperProcess is the perflab that gets SIGKILLed: run by
// TestSIGKILLedGovernorLockIsRepaired as a subprocess, it locks the phone
// with its "recommended" profile, says "locked" and waits.
func TestGovernorLockHelperProcess(t *testing.T) {
	server, serial := os.Getenv("PERFLAB_LOCK_HELPER_SERVER"), os.Getenv("PERFLAB_LOCK_HELPER_SERIAL")
	if server == "" {
		t.Skip("run as a subprocess by TestSIGKILLedGovernorLockIsRepaired")
	}
	ctx := context.Background()
	d, err := adb.Open(ctx, serial, []string{server})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	p := recommended(t)
	if _, err := d.ApplyProfile(ctx, p); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(10 * time.Minute)
	os.Exit(1)
}

// A perflab killed with the phone locked (performance, a fixed frequency,
// thermal core control off) leaves its record on the phone and this host;
// the next perflab that opens or lists the phone restores the stock
// settings first and says so.
func TestSIGKILLedGovernorLockIsRepaired(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 3})
	adbtest.Connect(t, srv, sim.Addr, "device")
	c := ctx(t)
	state := func() string {
		out, err := adb.NewClient(srv.Addr).Run(c, sim.Addr,
			"cat /sys/devices/system/cpu/cpu4/cpufreq/scaling_governor /sys/devices/system/cpu/cpu4/cpufreq/scaling_max_freq "+governor.ThermalCorePath)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(out), " ")
	}
	stock := state()

	cmd := exec.Command(os.Args[0], "-test.run=^TestGovernorLockHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PERFLAB_LOCK_HELPER_SERVER="+srv.Addr, "PERFLAB_LOCK_HELPER_SERIAL="+sim.Addr)
	helper := proctest.StartUntil(t, cmd, "locked", 90*time.Second)
	locked := state()
	if locked == stock {
		t.Fatalf("the helper's profile changed nothing (%s): the test shows nothing", stock)
	}
	pid := helper.Pid()

	// While the helper runs, opening the phone is refused, naming the
	// helper, and leaves its settings alone; listing it (which takes no
	// lock) says who changed them.
	_, err := adb.Open(c, sim.Addr, []string{srv.Addr})
	var busy *devlock.BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), fmt.Sprintf("in use: pid %d, adb.test -test.run=^TestGovernorLockHelperProcess$", pid)) {
		t.Errorf("open with the locking perflab alive: %v, want a refusal naming pid %d", err, pid)
	}
	if infos, err := adb.List(c, []string{srv.Addr}); err != nil || len(infos) != 1 ||
		!hasNote(infos[0], fmt.Sprintf("governor settings changed by perflab pid %d", pid)) {
		t.Errorf("list with the locking perflab alive: %+v %v", infos, err)
	}
	if got := state(); got != locked {
		t.Fatalf("opening the phone changed %s to %s under a running perflab", locked, got)
	}

	helper.Kill9(t)
	if got := state(); got != locked {
		t.Fatalf("after SIGKILL the phone is %s, want still locked %s", got, locked)
	}
	marker, err := adb.NewClient(srv.Addr).Run(c, sim.Addr, "cat "+governor.MarkerPath)
	if err != nil || !strings.Contains(marker, fmt.Sprintf(`"pid":%d`, pid)) {
		t.Fatalf("marker on the phone: %q %v", marker, err)
	}
	hostCopy := filepath.Join(os.Getenv("XDG_STATE_HOME"), "perflab", "governor", governor.FileName("adb:"+sim.Addr))
	if st, err := os.Stat(hostCopy); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("host copy %s: %v %v, want mode 0600", hostCopy, st, err)
	}

	// `perflab devices` lists it: the listing repairs first.
	infos, err := adb.List(c, []string{srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("restored governor settings left by an earlier perflab run (pid %d, ", pid)
	found := false
	for _, info := range infos {
		found = found || hasNote(info, want)
	}
	if !found {
		t.Errorf("list: no note %q in %+v", want, infos)
	}
	if got := state(); got != stock {
		t.Errorf("after the repair the phone is %s, want stock %s", got, stock)
	}
	if out, _ := adb.NewClient(srv.Addr).Run(c, sim.Addr, "ls "+governor.MarkerPath+" 2>&1"); !strings.Contains(out, "No such file") {
		t.Errorf("marker left on the phone: %q", out)
	}
	if _, err := os.Stat(hostCopy); !os.IsNotExist(err) {
		t.Errorf("host copy left: %v", err)
	}

	// A clean run leaves no record behind, and the next open has nothing to say.
	d, err := adb.Open(c, sim.Addr, []string{srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ApplyProfile(c, recommended(t)); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != stock {
		t.Errorf("after a clean close the phone is %s, want stock %s", got, stock)
	}
	d, err = adb.Open(c, sim.Addr, []string{srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if hasNote(d.Info(), "governor") {
		t.Errorf("notes after a clean close: %q", d.Info().Notes)
	}
}

func hasNote(info lab.DeviceInfo, prefix string) bool {
	for _, n := range info.Notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// recommended is the pixel preset's built-in "recommended" profile.
func recommended(t *testing.T) lab.GovernorProfile {
	pixel, err := sim.Lookup("pixel")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := pixel.Builtin("recommended")
	if !ok {
		t.Fatal("pixel has no recommended profile")
	}
	return p
}
