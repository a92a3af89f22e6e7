package adb

import (
	"context"
	"errors"
	"testing"

	"github.com/perflab/perflab/internal/checktest"
	"github.com/perflab/perflab/lab"
)

// CheckControls refuses, from what Open learnt and before either touches
// the phone, the controls Setup refuses, with the same error: those that
// need root on a phone without it, the proxy through an adb server on
// another host without a tunnel, a governor profile the phone does not
// know. A trial given them live fails with that error. (The servers'
// addresses are never dialled: 192.0.2.7 is a documentation one.)
func TestCheckControlsMatchesSetup(t *testing.T) {
	remote := &Device{c: NewClient("192.0.2.7:5037"), serial: "emulator-5554", rootVia: "adbd"}
	noRoot := &Device{c: NewClient("127.0.0.1:5037"), serial: "emulator-5554"}
	rooted := &Device{c: NewClient("127.0.0.1:5037"), serial: "emulator-5554", rootVia: "su"}
	tests := []struct {
		name     string
		dev      *Device
		controls lab.Controls
		want     string // "" for controls the phone applies
		remote   bool   // the error is ErrRemoteReverse
	}{
		{"rooted, all", rooted, lab.Controls{Tmpfs: true, ClockReset: true, DropCaches: true, RestoreSnapshot: true, KillApp: true, Proxy: "record", Governor: []byte(`"stock"`)}, "", false},
		{"no root, shell controls", noRoot, lab.Controls{KillApp: true, DismissDialogs: true, Proxy: "replay"}, "", false},
		{"remote, am's controls", remote, lab.Controls{KillApp: true, Tmpfs: true}, "", false},
		{"no root, tmpfs", noRoot, lab.Controls{Tmpfs: true, KillApp: true}, "controls.tmpfs: needs root, and adbd is not root and su is missing", false},
		{"no root, several", noRoot, lab.Controls{Governor: []byte(`"performance"`), DropCaches: true}, "controls.governor, controls.drop_caches: need root", false},
		{"remote proxy", remote, lab.Controls{Proxy: "record"}, `controls.proxy "record": not supported by this device (the record/replay proxy: adb server 192.0.2.7:5037 is on another host`, true},
		{"unknown profile", rooted, lab.Controls{Governor: []byte(`"nosuch"`)}, `controls.governor: unknown profile "nosuch"`, false},
	}
	for _, tt := range tests {
		exp := &lab.Experiment{Controls: tt.controls}
		cerr := tt.dev.CheckControls(exp)
		if tt.want == "" {
			if cerr != nil {
				t.Errorf("%s: %v", tt.name, cerr)
			}
			continue // Setup would go on to the phone
		}
		if tt.remote != errors.Is(cerr, ErrRemoteReverse) {
			t.Errorf("%s: errors.Is(%v, ErrRemoteReverse) is %v", tt.name, cerr, !tt.remote)
		}
		_, serr := tt.dev.Setup(context.Background(), exp)
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
		if tt.controls.Governor != nil {
			continue // a trial resolves its profile once the builds are set up
		}
		r := tt.dev.RunTrial(context.Background(), lab.TrialRequest{Controls: tt.controls})
		if r.Status != lab.StatusFailed || cerr == nil || r.Reason != "reset: "+cerr.Error() {
			t.Errorf("%s live: trial %s %q, want failed %q", tt.name, r.Status, r.Reason, cerr)
		}
	}
}
