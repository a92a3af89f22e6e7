package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/perflab/perflab/internal/proctest"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/sessions"
)

// startSimdevice runs `perflab simdevice` in-process on a free port,
// connected to server, with extra flags, until the test ends.
func startSimdevice(t *testing.T, server *adbtest.Server, preset string, extra ...string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", adbtest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- cmdSimdevice(ctx, append([]string{"--listen", addr, "--preset", preset, "--connect", server.Addr}, extra...), &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("simdevice exited %d: %s", code, errb.String())
		}
	})
	adbtest.WaitState(t, server, addr, "device", time.Minute)
	return addr
}

func TestRunSimExampleOnSimdeviceThroughADB(t *testing.T) {
	// Its own adb server and phones on free ports: it overlaps the
	// package's other adb tests, mostly waiting on the wire.
	t.Parallel()
	s1 := adbtest.StartServer(t)
	s2 := adbtest.StartServer(t)
	d1 := startSimdevice(t, s1, "pixel")
	d2 := startSimdevice(t, s2, "nexus5")

	// Both devices are listed, each with the server it is on.
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"devices", "--json", "--adb", s1.Addr, "--adb", s2.Addr}, &out, &errb); code != 0 {
		t.Fatalf("devices: %d %s", code, errb.String())
	}
	var list []lab.DeviceInfo
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	servers := map[string]string{}
	for _, d := range list {
		servers[d.ID] = d.Server
	}
	if servers["adb:"+d1] != s1.Addr || servers["adb:"+d2] != s2.Addr {
		t.Fatalf("devices listed %v", servers)
	}

	// The sim example runs unchanged on both at once, through real adb
	// servers, with every control on (governor lock, reset procedure,
	// metrics over adb reverse); 20 of its 50 rounds show it, each some
	// twenty adb commands on the wire.
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i, d := range []struct{ serial, server string }{{d1, s1.Addr}, {d2, s2.Addr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errb bytes.Buffer
			sess := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
			code := dispatch(context.Background(), []string{"run", "examples/sim-controls-on.json", "--device", "adb:" + d.serial,
				"--adb", d.server, "--trials", "20", "--headless", "--quiet", "--out", sess}, &out, &errb)
			// An A/A: no change, or at 20 rounds the odd seeded false
			// report (exit 3); the verdict is not this test's question.
			if code != exitOK && code != exitRegression {
				t.Errorf("run on %s: exit %d\n%s\n%s", d.serial, code, out.String(), errb.String())
				return
			}
			if !strings.Contains(out.String(), "startup_ms") {
				t.Errorf("run on %s printed no startup_ms row:\n%s", d.serial, out.String())
			}
			s, err := sessions.Load(sess)
			if err != nil {
				t.Error(err)
				return
			}
			ok, profiles := 0, 0
			for _, e := range s.Events {
				if e.Type == lab.EventTrial && e.Trial.Counted() {
					ok++
				}
				if e.Type == lab.EventSettings && e.Settings.Profile != nil {
					profiles++
					if len(e.Settings.Mismatches) > 0 {
						t.Errorf("%s: governor mismatches %v", d.serial, e.Settings.Mismatches)
					}
				}
			}
			if ok != 40 || profiles == 0 {
				t.Errorf("%s: %d counted trials (want 40), %d governor settings events", d.serial, ok, profiles)
			}
		}()
	}
	wg.Wait()
}

func TestSimdeviceHelpAndBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"simdevice", "--help"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "adb connect") {
		t.Errorf("--help: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := dispatch(context.Background(), []string{"simdevice", "--preset", "iphone"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "iphone") {
		t.Errorf("bad preset: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := dispatch(context.Background(), []string{"devices", "--adb", "nohost"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "HOST:PORT") {
		t.Errorf("bad --adb: %d %q", code, errb.String())
	}
}

func TestCheckWithProfileOnSimdevice(t *testing.T) {
	srv := adbtest.StartServer(t)
	d := startSimdevice(t, srv, "pixel")
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"check", "adb:" + d, "--adb", srv.Addr, "--profile", "recommended",
		"--duration", "2m", "--json"}, &out, &errb)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if code != 0 || len(lines) != 121 || !strings.Contains(lines[len(lines)-1], `"verdict":"stable"`) {
		t.Fatalf("check: exit %d, %d lines, last %q\n%s", code, len(lines), lines[len(lines)-1], errb.String())
	}
	// The probe ran for real over adb and the lock was undone afterwards.
	got, err := srv.Run(context.Background(), d, "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
	if err != nil || strings.TrimSpace(got) != "schedutil" {
		t.Errorf("governor after check: %q %v, want the stock schedutil back", got, err)
	}
}

func TestSimdeviceSerialAndRoot(t *testing.T) {
	srv := adbtest.StartServer(t)
	addr := fmt.Sprintf("127.0.0.1:%d", adbtest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- cmdSimdevice(ctx, []string{"--listen", addr, "--serial", "LAB-PHONE-7", "--root", "--connect", srv.Addr}, &out, &errb)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()
	adbtest.WaitState(t, srv, addr, "device", time.Minute)
	got, err := srv.Run(context.Background(), addr, "getprop ro.serialno; id -u")
	if err != nil || got != "LAB-PHONE-7\n0\n" {
		t.Errorf("serial and uid: %q %v", got, err)
	}
	// On exit it disconnects: the server forgets the phone instead of
	// keeping it offline.
	// (The server drops a transport asynchronously: wait for it.)
	stop()
	state := ""
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		es, err := srv.Devices(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		state = ""
		for _, e := range es {
			if e.Serial == addr {
				state = e.State
			}
		}
		if state == "" {
			return
		}
	}
	t.Errorf("a minute after simdevice exited the server still lists %s (%s)", addr, state)
}

func TestSimdeviceListenRefusesNonLoopback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	if code := cmdSimdevice(ctx, []string{"--listen", "0.0.0.0:0"}, &out, &errb); code != exitUsage {
		t.Fatalf("--listen 0.0.0.0:0 exited %d, want %d (usage); stderr %s", code, exitUsage, errb.String())
	}
	if !strings.Contains(errb.String(), "is not a loopback address") || !strings.Contains(errb.String(), "--allow-remote") {
		t.Errorf("stderr does not explain the refusal: %s", errb.String())
	}

	// With --allow-remote it serves, after a warning.
	errb.Reset()
	done := make(chan int, 1)
	w := &syncBuffer{}
	go func() { done <- cmdSimdevice(ctx, []string{"--listen", "0.0.0.0:0", "--allow-remote"}, w, w) }()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.String(), "listening on") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("--allow-remote exited %d: %s", code, w.String())
	}
	if !strings.Contains(w.String(), "WARNING: --listen: listen address \"0.0.0.0:0\" is not a loopback address") || !strings.Contains(w.String(), "listening on") {
		t.Errorf("no warning before serving:\n%s", w.String())
	}
}

// syncBuffer is a bytes.Buffer safe for one writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `perflab check --profile recommended` SIGKILLed with the phone locked:
// the next perflab command (here `devices`, then `check`) restores the
// stock settings first and says so, and no check takes the locked state
// for the original.
func TestKilledCheckLeavesNoLockedPhone(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // "recommended" = the preset's built-in
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	srv := adbtest.StartServer(t)
	// --realtime: the probe takes wall-clock time, so the check is still
	// running when it is killed.
	addr := startSimdevice(t, srv, "pixel", "--realtime")
	gov := func() string {
		out, err := srv.Run(context.Background(), addr, "cat /sys/devices/system/cpu/cpu4/cpufreq/scaling_governor /sys/devices/system/cpu/cpu4/cpufreq/scaling_max_freq")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(out), " ")
	}
	stock := gov()

	// startLocked runs `perflab check --profile recommended` until its
	// first sample: the profile is applied and read back by then. The
	// deadline only catches a hang.
	startLocked := func() *proctest.Proc {
		cmd := exec.Command(bin, "check", "adb:"+addr, "--adb", srv.Addr, "--profile", "recommended", "--duration", "10m", "--json")
		var outb, errb syncBuffer
		cmd.Stdout, cmd.Stderr = &outb, &errb
		p := proctest.Start(t, cmd)
		deadline := time.Now().Add(2 * time.Minute)
		for !strings.Contains(outb.String(), `"mflops"`) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if !strings.Contains(outb.String(), `"mflops"`) {
			t.Fatalf("check printed no sample within 2 min: %s%s", outb.String(), errb.String())
		}
		if gov() == stock {
			t.Fatalf("check is probing but the phone is not locked: %s", errb.String())
		}
		return p
	}
	p := startLocked()
	locked := gov()
	p.Kill9(t)
	if got := gov(); got != locked {
		t.Fatalf("after SIGKILL the phone is %q, want still locked %q", got, locked)
	}

	var out, stderr bytes.Buffer
	code := dispatch(context.Background(), []string{"devices", "--adb", srv.Addr}, &out, &stderr)
	want := fmt.Sprintf("adb:%s: restored governor settings left by an earlier perflab run (pid %d, ", addr, p.Pid())
	if code != 0 || !strings.Contains(out.String(), want) {
		t.Errorf("devices: exit %d, output lacks %q:\n%s%s", code, want, out.String(), stderr.String())
	}
	if got := gov(); got != stock {
		t.Errorf("after `perflab devices` the phone is %q, want stock %q", got, stock)
	}

	// Killed again; this time `check` (no profile) is the next command.
	p = startLocked()
	p.Kill9(t)
	out.Reset()
	stderr.Reset()
	dispatch(context.Background(), []string{"check", "adb:" + addr, "--adb", srv.Addr, "--duration", "2s", "--json"}, &out, &stderr)
	want = fmt.Sprintf("perflab check: restored governor settings left by an earlier perflab run (pid %d, ", p.Pid())
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("check: stderr lacks %q:\n%s", want, stderr.String())
	}
	if got := gov(); got != stock {
		t.Errorf("after `perflab check` the phone is %q, want stock %q", got, stock)
	}
	if entries, _ := os.ReadDir(filepath.Join(state, "perflab", "governor")); len(entries) != 0 {
		t.Errorf("host records left: %v", entries)
	}

	// A hang-up (the terminal closed) is a clean end: perflab restores the
	// phone itself and leaves no record.
	p = startLocked()
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if got := gov(); got != stock {
		t.Errorf("after SIGHUP the phone is %q, want stock %q", got, stock)
	}
	if out, _ := srv.Run(context.Background(), addr, "ls "+governor.MarkerPath+" 2>&1"); !strings.Contains(out, "No such file") {
		t.Errorf("marker left on the phone after SIGHUP: %q", out)
	}
	if entries, _ := os.ReadDir(filepath.Join(state, "perflab", "governor")); len(entries) != 0 {
		t.Errorf("host records left after SIGHUP: %v", entries)
	}
}

// `perflab run` SIGKILLed mid-run on a phone with every control on leaves
// the governor locked and a tmpfs over the app's data; the next command
// (`devices`) puts back both.
func TestKilledRunLeavesNoTmpfsOrLock(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	srv := adbtest.StartServer(t)
	addr := startSimdevice(t, srv, "pixel", "--realtime")
	sh := func(cmd string) string {
		out, err := srv.Run(context.Background(), addr, cmd)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	gov := "cat /sys/devices/system/cpu/cpu4/cpufreq/scaling_governor"
	stock := sh(gov)
	cmd := exec.Command(bin, "run", "examples/sim-controls-on.json", "--device", "adb:"+addr, "--adb", srv.Addr,
		"--headless", "--quiet", "--out", filepath.Join(t.TempDir(), "s.jsonl"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	p := proctest.Start(t, cmd)
	deadline := time.Now().Add(120 * time.Second)
	for !strings.Contains(sh("mount"), "type tmpfs") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(sh("mount"), fmt.Sprintf("perflab.%d.", p.Pid())) {
		t.Fatalf("the run mounted no tmpfs named after it within 120s: %q\n%s", sh("mount"), errb.String())
	}
	// While it runs, a second run on the phone is refused at once, naming
	// the first; the first is left alone.
	var out2, err2 bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "examples/sim-controls-on.json", "--device", "adb:" + addr, "--adb", srv.Addr,
		"--headless", "--quiet", "--out", filepath.Join(t.TempDir(), "second.jsonl")}, &out2, &err2)
	if want := fmt.Sprintf("device adb:%s is in use: pid %d, perflab run examples/sim-controls-on.json", addr, p.Pid()); code == 0 || !strings.Contains(err2.String(), want) {
		t.Errorf("second run on a busy phone: exit %d, want a refusal with %q\n%s", code, want, err2.String())
	}
	if !strings.Contains(sh("mount"), fmt.Sprintf("perflab.%d.", p.Pid())) {
		t.Errorf("the refused run disturbed the first: mounts %q", sh("mount"))
	}
	p.Kill9(t)
	if sh(gov) == stock || !strings.Contains(sh("mount"), "type tmpfs") {
		t.Fatalf("after SIGKILL: governor %q (stock %q), mounts %q: nothing was left to repair", sh(gov), stock, sh("mount"))
	}

	var out, stderr bytes.Buffer
	dispatch(context.Background(), []string{"devices", "--adb", srv.Addr}, &out, &stderr)
	for _, want := range []string{
		fmt.Sprintf("restored governor settings left by an earlier perflab run (pid %d, ", p.Pid()),
		fmt.Sprintf("unmounted the tmpfs an earlier perflab run (pid %d) left over /data/data/org.perflab.sim.feed", p.Pid()),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("devices output lacks %q:\n%s%s", want, out.String(), stderr.String())
		}
	}
	if got := sh(gov); got != stock {
		t.Errorf("governor after the repair %q, want stock %q", got, stock)
	}
	if m := sh("mount"); strings.Contains(m, "type tmpfs") {
		t.Errorf("tmpfs left after the repair: %q", m)
	}
	// The killed run's phone lock went with it.
	d, err := adb.Open(context.Background(), addr, []string{srv.Addr})
	if err != nil {
		t.Fatalf("open after the killed run: %v", err)
	}
	d.Close()
}

// TestSimdeviceCount serves a lab of three phones through a real adb
// server: consecutive free ports (past one taken), each with its own
// serial and slowdown, all connected with --connect and all forgotten on
// exit.
func TestSimdeviceCount(t *testing.T) {
	srv := adbtest.StartServer(t)
	first := adbtest.FreePort(t)
	if blocker, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", first+1)); err == nil {
		defer blocker.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	w := &syncBuffer{}
	go func() {
		done <- cmdSimdevice(ctx, []string{"--listen", fmt.Sprintf("127.0.0.1:%d", first), "--count", "3", "--spread", "0.1",
			"--serial", "LAB", "--seed", "5", "--connect", srv.Addr}, w, w)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("simdevice exited %d:\n%s", code, w.String())
			}
		}
	}
	defer stop()
	listening := regexp.MustCompile(`listening on (127\.0\.0\.1:(\d+))`)
	deadline := time.Now().Add(time.Minute)
	for len(listening.FindAllString(w.String(), -1)) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	ms := listening.FindAllStringSubmatch(w.String(), -1)
	if len(ms) != 3 {
		t.Fatalf("want 3 phones listening:\n%s", w.String())
	}
	var addrs []string
	var ports []int
	for _, m := range ms {
		p, _ := strconv.Atoi(m[2])
		addrs, ports = append(addrs, m[1]), append(ports, p)
	}
	if ports[0] <= first || ports[1] != ports[0]+1 || ports[2] != ports[0]+2 {
		t.Errorf("ports %v from %d: want 3 consecutive above %d (taken)", ports, first, first+1)
	}
	wantSlow := []string{"1", "1.05", "1.1"}
	for i, a := range addrs {
		adbtest.WaitState(t, srv, a, "device", time.Minute)
		got, err := srv.Run(context.Background(), a, "getprop ro.serialno; getprop perflab.sim.slowdown")
		if want := fmt.Sprintf("LAB-%d\n%s\n", i+1, wantSlow[i]); err != nil || got != want {
			t.Errorf("phone %d at %s: %q %v, want %q", i+1, a, got, err, want)
		}
	}
	for _, want := range []string{"serial LAB-2, seed 6, slowdown 1.0500", "adb server " + srv.Addr + ": connected to " + addrs[2]} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, w.String())
		}
	}
	stop()
	for _, a := range addrs {
		adbtest.WaitState(t, srv, a, "", time.Minute)
	}
}

func TestSimdeviceCountBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--count", "0"}, "--count 0: want 1 to 256"},
		{[]string{"--count", "2", "--spread", "-1"}, "--spread: spread -1"},
	} {
		var out, errb bytes.Buffer
		if code := cmdSimdevice(context.Background(), tt.args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", tt.args, code, errb.String(), exitUsage, tt.want)
		}
	}
}
