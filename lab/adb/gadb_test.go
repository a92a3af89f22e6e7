package adb_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/electricbubble/gadb"

	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/simdevice"
)

// TestGadbLimitsAndOurWorkarounds shows, against a real adb server, why
// lab/adb talks to the server itself: gadb drops unauthorized devices, has
// no state for the others (an offline phone looks usable), and its plain shell has no exit status and mixes stderr into
// stdout. It also exercises the simdevice's plain shell: and gadb's push.
func TestGadbLimitsAndOurWorkarounds(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	up := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 1})
	locked := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 2, Unauthorized: true})
	gone := adbtest.StartSim(t, "", simdevice.Options{Preset: "nexus5", Seed: 3})
	adbtest.Connect(t, srv, up.Addr, "device")
	adbtest.Connect(t, srv, locked.Addr, "unauthorized")
	adbtest.Connect(t, srv, gone.Addr, "device")
	gone.Stop()
	adbtest.WaitState(t, srv, gone.Addr, "offline", time.Minute)

	g, err := gadb.NewClientWith("127.0.0.1", srv.Port)
	if err != nil {
		t.Fatal(err)
	}
	gl, err := g.DeviceList()
	if err != nil {
		t.Fatal(err)
	}
	ours, err := srv.Devices(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// gadb drops the unauthorized phone and gives no state for the rest:
	// the offline one looks like the working one.
	for _, d := range gl {
		if d.Serial() == locked.Addr {
			t.Errorf("gadb now lists unauthorized devices: drop this workaround's justification")
		}
	}
	states := map[string]string{}
	for _, d := range ours {
		states[d.Serial] = d.State
	}
	if len(gl) != 2 || states[up.Addr] != "device" || states[locked.Addr] != "unauthorized" || states[gone.Addr] != "offline" {
		t.Errorf("gadb lists %d devices; lab/adb states %v", len(gl), states)
	}

	// gadb's plain shell: output only, stderr mixed in, no exit status.
	var dev gadb.Device
	for _, d := range gl {
		if d.Serial() == up.Addr {
			dev = d
		}
	}
	out, err := dev.RunShellCommand("echo out; echo err >&2; exit 3")
	if err != nil || !strings.Contains(out, "out") || !strings.Contains(out, "err") {
		t.Errorf("gadb shell: %q %v", out, err)
	}
	var o, e bytes.Buffer
	code, err := srv.Shell(ctx(t), up.Addr, "echo out; echo err >&2; exit 3", nil, &o, &e)
	if err != nil || code != 3 || o.String() != "out\n" || e.String() != "err\n" {
		t.Errorf("lab/adb shell: code %d out %q err %q %v", code, o.String(), e.String(), err)
	}
	// gadb's push (sync SEND without a stat first) lands on the simdevice.
	if err := dev.Push(strings.NewReader("pushed by gadb\n"), "/data/local/tmp/g.txt", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.Run(ctx(t), up.Addr, "cat /data/local/tmp/g.txt"); err != nil || got != "pushed by gadb\n" {
		t.Errorf("file pushed by gadb reads %q %v", got, err)
	}
	// But gadb's push drops a chunk that arrives together with io.EOF
	// (as iotest.DataErrReader, gzip or a network body give it); lab/adb's
	// push keeps it.
	const payload = "the last chunk\n"
	if err := dev.Push(iotest.DataErrReader(strings.NewReader(payload)), "/data/local/tmp/g-eof.txt", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.Run(ctx(t), up.Addr, "cat /data/local/tmp/g-eof.txt"); err != nil || got == payload {
		t.Errorf("gadb now keeps the chunk read with io.EOF (%q %v): drop the own push's justification", got, err)
	}
	if err := srv.Push(ctx(t), up.Addr, iotest.DataErrReader(strings.NewReader(payload)), "/data/local/tmp/ours-eof.txt", 0o644, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, err := srv.Run(ctx(t), up.Addr, "cat /data/local/tmp/ours-eof.txt"); err != nil || got != payload {
		t.Errorf("lab/adb push with the last chunk at io.EOF: %q %v", got, err)
	}
}

// TestNoSixtySecondCap runs a 65 s command that prints a line every 13 s:
// gadb's plain shell gives up after its 60 s read deadline, lab/adb's
// shell v2 streams every line and returns the exit status. It runs in
// parallel with the other tests so it adds little to the package's time.
func TestNoSixtySecondCap(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 1})
	adbtest.Connect(t, srv, sim.Addr, "device")
	cmd := "echo 1; sleep 13; echo 2; sleep 13; echo 3; sleep 13; echo 4; sleep 13; echo 5; sleep 13; echo done; exit 5"

	gadbErr := make(chan error, 1)
	go func() {
		g, err := gadb.NewClientWith("127.0.0.1", srv.Port)
		if err != nil {
			gadbErr <- err
			return
		}
		devs, err := g.DeviceList()
		if err != nil || len(devs) != 1 {
			gadbErr <- fmt.Errorf("gadb devices: %v %v", devs, err)
			return
		}
		_, err = devs[0].RunShellCommand(cmd)
		gadbErr <- err
	}()

	w := &timedWriter{}
	start := time.Now()
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, err := srv.Shell(c, sim.Addr, cmd, nil, w, nil)
	if err != nil || code != 5 {
		t.Fatalf("after %v: code %d err %v", time.Since(start), code, err)
	}
	if w.buf.String() != "1\n2\n3\n4\n5\ndone\n" {
		t.Errorf("output %q", w.buf.String())
	}
	// Six writes, one per line 13 s apart: output collected to the end
	// would come in one. (No bound on when: a loaded host delays any line.)
	if len(w.times) != 6 {
		t.Errorf("output was not streamed: %d writes", len(w.times))
	}
	if err := <-gadbErr; err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("gadb on the same command: %v (expected its 60 s read deadline to fire)", err)
	}
}
