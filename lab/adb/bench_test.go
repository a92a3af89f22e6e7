package adb_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/simdevice"
)

func benchDevice(b *testing.B) (*adbtest.Server, *adbtest.Sim) {
	srv := adbtest.StartServer(b)
	sim := adbtest.StartSim(b, "", simdevice.Options{Preset: "pixel", Seed: 1})
	adbtest.Connect(b, srv, sim.Addr, "device")
	return srv, sim
}

// BenchmarkShellRoundTrip is one `adb shell true` with exit status through
// the adb server to the simdevice: the floor of every device command.
func BenchmarkShellRoundTrip(b *testing.B) {
	srv, sim := benchDevice(b)
	ctx := context.Background()
	for b.Loop() {
		if code, err := srv.Shell(ctx, sim.Addr, "true", nil, nil, nil); err != nil || code != 0 {
			b.Fatal(code, err)
		}
	}
}

// BenchmarkPush1MB pushes one MiB through sync.
func BenchmarkPush1MB(b *testing.B) {
	srv, sim := benchDevice(b)
	data := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := srv.Push(context.Background(), sim.Addr, bytes.NewReader(data), "/data/local/tmp/b", 0o644, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrialAllControls is one adb trial with the whole reset
// procedure (kill, dialogs, snapshot restore onto tmpfs, clock, proxy,
// drop caches), am start -W and the app's metrics over reverse.
func BenchmarkTrialAllControls(b *testing.B) {
	srv, sim := benchDevice(b)
	ctx := context.Background()
	_, dev := openSimPhone(b, ctx, sim.Addr, srv.Addr)
	defer dev.Close()
	exp := experiment(1)
	if _, err := dev.Setup(ctx, exp); err != nil {
		b.Fatal(err)
	}
	req := lab.TrialRequest{Arm: lab.ArmControl, BuildKey: lab.ArmControl, Build: exp.Builds[lab.ArmControl], Controls: exp.Controls, Metrics: exp.Metrics}
	for b.Loop() {
		if res := dev.RunTrial(ctx, req); res.Status != lab.StatusOK {
			b.Fatal(res.Reason)
		}
	}
}
