package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/sessions"
)

// A pool selector on a real adb server: three simulated Pixel 3 phones
// (perflab simdevice) run one experiment side by side; one is stopped in
// the middle of the run. Its trial in flight fails, its round is redone
// on the others, and the run completes with the plan's pairs; the report
// has a block per device.
func TestRunPoolOverADBWithADeviceGoingOffline(t *testing.T) {
	// Its own adb server and phones on free ports: it overlaps the
	// package's other adb tests, mostly waiting on the wire.
	t.Parallel()
	const poolTrials = "120"
	s := adbtest.StartServer(t)
	startSimdevice(t, s, "pixel")
	startSimdevice(t, s, "pixel")
	// The third runs until stopped.
	addr := fmt.Sprintf("127.0.0.1:%d", adbtest.FreePort(t))
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	simDone := make(chan int, 1)
	var serr bytes.Buffer
	go func() {
		simDone <- cmdSimdevice(sctx, []string{"--listen", addr, "--preset", "pixel", "--connect", s.Addr}, &bytes.Buffer{}, &serr)
	}()
	adbtest.WaitState(t, s, addr, "device", time.Minute)

	sess := filepath.Join(t.TempDir(), "pool.jsonl")
	runDone := make(chan int, 1)
	var out, errb syncBuffer
	go func() {
		runDone <- dispatch(context.Background(), []string{"run", "examples/sim-controls-off.json", "--device", "adb:model=Pixel 3",
			"--adb", s.Addr, "--headless", "--quiet", "--trials", poolTrials, "--out", sess, "--json"}, &out, &errb)
	}()
	// Stop the third phone once it has run a few trials. The plan is long
	// (120 rounds: tens of seconds under the race detector here; 400 took
	// minutes for no more coverage) so that the run cannot end
	// before this loop, polling the file, sees those trials, even on a
	// loaded host.
	victim := "adb:" + addr
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the third phone ran no trials; run output:\n%s", errb.String())
		}
		if got, err := sessions.Load(sess); err == nil {
			n := 0
			for _, tr := range got.Trials() {
				if tr.Device == victim {
					n++
				}
			}
			if n >= 2 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if code := <-simDone; code != 0 {
		t.Errorf("simdevice exited %d: %s", code, serr.String())
	}
	var code int
	select {
	case code = <-runDone:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the run did not end after a phone went away:\n%s", errb.String())
	}
	if code != exitOK && code != exitRegression {
		t.Fatalf("run exit %d:\n%s", code, errb.String())
	}
	got, err := sessions.Load(sess)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Header.Devices) != 3 {
		t.Fatalf("header lists %d devices", len(got.Header.Devices))
	}
	devs := map[string]int{}
	for _, tr := range got.Trials() {
		devs[tr.Device]++
	}
	if len(devs) != 3 {
		t.Errorf("trials by device %v", devs)
	}
	t.Logf("trials by device %v; notes:\n%s", devs, notesOf(got))
	var offline bool
	for _, e := range got.Events {
		if e.Type == lab.EventNote && strings.HasPrefix(e.Note.Text, victim+" offline") {
			offline = true
		}
	}
	if !offline {
		t.Errorf("no note says %s went offline; notes:\n%s", victim, notesOf(got))
	}
	ins := sessions.MetricInputs(got.Events)
	if want, _ := strconv.Atoi(poolTrials); len(ins) == 0 || len(ins[0].Pairs) < want {
		t.Fatalf("%d pairs, want the plan's %d", len(ins[0].Pairs), want)
	}
	var rep struct {
		Metrics []struct {
			Pool *struct {
				Devices []struct {
					Device string `json:"device"`
					N      int    `json:"n"`
				} `json:"devices"`
			} `json:"pool"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if len(rep.Metrics) == 0 || rep.Metrics[0].Pool == nil || len(rep.Metrics[0].Pool.Devices) < 2 {
		t.Fatalf("report --json has no per-device block:\n%s", out.String())
	}
}

func notesOf(s *sessions.Session) string {
	var b strings.Builder
	for _, e := range s.Events {
		if e.Type == lab.EventNote {
			b.WriteString(e.Note.Text + "\n")
		}
	}
	return b.String()
}

// --device is repeatable on run, validate and bisect: the run is a pool.
func TestDeviceRepeatableMakesAPool(t *testing.T) {
	sess := filepath.Join(t.TempDir(), "s.jsonl")
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"run", "examples/sim-controls-off.json", "--headless", "--quiet", "--trials", "12",
		"--device", "sim:pixel", "--device", "sim:pixel#2", "--out", sess}, &out, &errb)
	if code != exitOK && code != exitRegression {
		t.Fatalf("run: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "per device, startup_ms ms") || !strings.Contains(out.String(), "sim:pixel#2") {
		t.Errorf("run output has no per-device block:\n%s", out.String())
	}
	got, err := sessions.Load(sess)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Header.Plan.Devices) != 2 {
		t.Errorf("plan devices %v", got.Header.Plan.Devices)
	}
	// report reads the pool back from the file.
	out.Reset()
	if code := dispatch(context.Background(), []string{"report", sess}, &out, &errb); code != exitOK && code != exitRegression {
		t.Fatalf("report: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "per device, startup_ms ms") {
		t.Errorf("report has no per-device block:\n%s", out.String())
	}

	out.Reset()
	errb.Reset()
	code = dispatch(context.Background(), []string{"validate", "--experiment", "examples/sim-controls-off.json", "--quiet", "--aa", "4",
		"--device", "sim:pixel", "--device", "sim:pixel#2"}, &out, &errb)
	if !strings.Contains(out.String(), "Validation of sim:pixel,sim:pixel#2") {
		t.Errorf("validate on a pool: exit %d\n%s\n%s", code, out.String(), errb.String())
	}

	// A pool in fixed order is refused before any trial.
	errb.Reset()
	code = dispatch(context.Background(), []string{"run", "examples/sim-controls-off.json", "--headless", "--quiet", "--order", "fixed",
		"--device", "sim:pixel", "--device", "sim:pixel#2", "--out", filepath.Join(t.TempDir(), "f.jsonl")}, &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "fixed") {
		t.Errorf("fixed order on a pool: exit %d, %s", code, errb.String())
	}
}

// A phone that goes away and comes back rejoins the pool: stopped and
// started again on the same address, it is reconnected by the adb server
// and runs rounds again.
func TestPoolDeviceRejoinsOverADB(t *testing.T) {
	s := adbtest.StartServer(t)
	startSimdevice(t, s, "pixel")
	addr := fmt.Sprintf("127.0.0.1:%d", adbtest.FreePort(t))
	startSim := func() (stop func() int) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- cmdSimdevice(ctx, []string{"--listen", addr, "--preset", "pixel", "--connect", s.Addr}, &bytes.Buffer{}, &bytes.Buffer{})
		}()
		return func() int { cancel(); return <-done }
	}
	stop := startSim()
	adbtest.WaitState(t, s, addr, "device", time.Minute)

	sess := filepath.Join(t.TempDir(), "pool.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan int, 1)
	var out, errb syncBuffer
	go func() {
		runDone <- dispatch(ctx, []string{"run", "examples/sim-controls-off.json", "--device", "adb:model=Pixel 3",
			"--adb", s.Addr, "--headless", "--quiet", "--trials", "100000", "--out", sess}, &out, &errb)
	}()
	victim := "adb:" + addr
	// waitFor polls the session until cond holds for its events.
	waitFor := func(what string, cond func(evs []lab.Event) bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if got, err := sessions.Load(sess); err == nil && cond(got.Events) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting until %s; run output:\n%s", what, errb.String())
	}
	trialsOn := func(evs []lab.Event, after int) int {
		n := 0
		for _, e := range evs[after:] {
			if e.Type == lab.EventTrial && e.Trial.Device == victim {
				n++
			}
		}
		return n
	}
	noteAt := func(evs []lab.Event, text string) int {
		for i, e := range evs {
			if e.Type == lab.EventNote && strings.HasPrefix(e.Note.Text, text) {
				return i
			}
		}
		return -1
	}
	waitFor("the phone ran trials", func(evs []lab.Event) bool { return trialsOn(evs, 0) >= 4 })
	if code := stop(); code != 0 {
		t.Errorf("simdevice exited %d", code)
	}
	waitFor("the phone is offline", func(evs []lab.Event) bool { return noteAt(evs, victim+" offline") >= 0 })
	stop = startSim()
	defer stop()
	waitFor("the phone rejoins and runs again", func(evs []lab.Event) bool {
		i := noteAt(evs, victim+" is back")
		return i >= 0 && trialsOn(evs, i) >= 2
	})
	cancel()
	select {
	case <-runDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end when cancelled")
	}
}
