package adb_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/perflab/perflab/internal/checktest"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/adb/apk"
	"github.com/perflab/perflab/lab/simdevice"
)

// On a phone without the simulator's extras (as every real phone),
// CheckBuilds refuses exactly the builds Setup refuses, with the same
// error, without touching the phone, and passes an APK Setup installs.
func TestCheckBuildsMatchesSetup(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	phone := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 4})
	adbtest.Connect(t, srv, phone.Addr, "device")
	var b bytes.Buffer
	if err := apk.WriteAPK(&b, "org.perflab.sim.notes", ".MainActivity"); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(t.TempDir(), "notes.apk")
	if err := os.WriteFile(notes, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, err := adb.Open(ctx(t), phone.Addr, []string{srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ok := lab.Build{APK: notes}
	tests := []struct {
		name    string
		control lab.Build
		want    string // "" for a build the phone runs
	}{
		{"apk", ok, ""},
		{"command", lab.Build{Command: []string{"true"}}, `builds.control.package: empty; a build on an adb device is an Android app: set "apk", or "package" and "activity"`},
		{"sim app", lab.Build{App: "feed"}, "builds.control.package: empty"},
		{"no activity", lab.Build{Package: "org.perflab.sim.feed"}, "builds.control.activity: empty for org.perflab.sim.feed"},
		{"no apk file", lab.Build{APK: "/no/such.apk"}, "builds.control.apk: "},
	}
	for _, tt := range tests {
		exp := &lab.Experiment{Builds: map[string]lab.Build{lab.ArmControl: tt.control, lab.ArmTreatment: ok}}
		cerr := dev.CheckBuilds(exp)
		_, serr := dev.Setup(ctx(t), exp)
		checktest.Agree(t, tt.name, cerr, serr, tt.want)
	}
}
