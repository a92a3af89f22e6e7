package adb_test

import (
	"bytes"
	"strings"
	"testing"
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
	srv := adbtest.StartServer(t)
	up := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 1})
	locked := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 2, Unauthorized: true})
	gone := adbtest.StartSim(t, "", simdevice.Options{Preset: "nexus5", Seed: 3})
	adbtest.Connect(t, srv, up.Addr, "device")
	adbtest.Connect(t, srv, locked.Addr, "unauthorized")
	adbtest.Connect(t, srv, gone.Addr, "device")
	gone.Stop()
	adbtest.WaitState(t, srv, gone.Addr, "offline", 20*time.Second)

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
}
