package probebin

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab/adb/probebin/internal/manifest"
)

func TestEmbeddedBuildsAreStaticForTheirABI(t *testing.T) {
	want := map[string]elf.Machine{"arm64-v8a": elf.EM_AARCH64, "armeabi-v7a": elf.EM_ARM}
	for _, tg := range Targets() {
		f, err := elf.NewFile(bytes.NewReader(tg.Binary))
		if err != nil {
			t.Fatalf("%s: %v", tg.ABI, err)
		}
		if f.Machine != want[tg.ABI] {
			t.Errorf("%s: machine %v, want %v", tg.ABI, f.Machine, want[tg.ABI])
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked (has an interpreter); phones need static builds", tg.ABI)
			}
		}
		if n := len(tg.Binary); n > 3<<20 {
			t.Errorf("%s: %d bytes, over the 3 MB budget for checked-in builds", tg.ABI, n)
		}
	}
	if tg, err := ForABIs([]string{"x86_64", "armeabi-v7a", "armeabi"}); err != nil || tg.ABI != "armeabi-v7a" {
		t.Errorf("ForABIs picked %q, %v", tg.ABI, err)
	}
	if _, err := ForABIs([]string{"x86_64"}); err == nil {
		t.Error("ForABIs(x86_64) found a build")
	}
}

// TestEmbeddedProbeIsCurrent compares the probe's sources of the day (as
// go list gives them for each target) and the checked-in builds with
// probe.sum, which go generate wrote when it built them: a change to the
// probe without go generate fails here, in a second.
func TestEmbeddedProbeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not found")
	}
	f, err := os.Open(manifest.File)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := manifest.Read(f, manifest.File)
	if err != nil {
		t.Fatal(err)
	}
	var targets []manifest.Target
	for _, tg := range Targets() {
		targets = append(targets, manifest.Target{ABI: tg.ABI, GOARCH: tg.GOARCH, GOARM: tg.GOARM, File: tg.File})
		if got, err := os.ReadFile(tg.File); err != nil || !bytes.Equal(got, tg.Binary) {
			t.Errorf("%s: the embedded build is not %s (%v)", tg.ABI, tg.File, err)
		}
	}
	got, err := manifest.Make(".", Package, targets, BuildFlags)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("probe.sum has %d entries, the builds %d: run go generate ./lab/adb/probebin", len(want), len(got))
	}
	for i := range got {
		switch {
		case got[i].What == "go" && got[i] != want[i]:
			t.Logf("built with %s, testing with %s: the builds may differ byte for byte, not in what they do", want[i].Value, got[i].Value)
		case got[i] != want[i]:
			t.Errorf("%s %s: %s, probe.sum says %s: the checked-in perflab-probe is stale: run go generate ./lab/adb/probebin", got[i].What, got[i].ABI, got[i].Value, want[i].Value)
		}
	}
}

// TestEmbeddedProbeRebuildsIdentically rebuilds the probe the way go
// generate does and compares the builds byte for byte: the builds are
// what probe.sum says they were made from. From a cold build cache it
// costs a minute of both cores (the standard library and gonum for two
// architectures), so it runs when PERFLAB_PROBE_REBUILD=1 (docs/testing.md).
func TestEmbeddedProbeRebuildsIdentically(t *testing.T) {
	if os.Getenv("PERFLAB_PROBE_REBUILD") != "1" {
		t.Skip("set PERFLAB_PROBE_REBUILD=1 to rebuild the probe and compare")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	dir := t.TempDir()
	for _, tg := range Targets() {
		out := filepath.Join(dir, tg.ABI)
		args := append([]string{"build"}, BuildFlags...)
		cmd := exec.Command(gobin, append(args, "-o", out, Package)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+tg.GOARCH, "GOARM="+tg.GOARM)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", tg.ABI, err, b)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, tg.Binary) {
			t.Errorf("%s: the checked-in perflab-probe differs from a fresh build (%d bytes, fresh build %d): run go generate ./lab/adb/probebin", tg.ABI, len(tg.Binary), len(got))
		}
	}
}

// TestManifestBadLine: a line that is not an entry is named by its number.
func TestManifestBadLine(t *testing.T) {
	_, err := manifest.Read(strings.NewReader("# c\ngo go1.26\nsource arm64-v8a\n"), "probe.sum")
	if err == nil || !strings.Contains(err.Error(), "probe.sum:3:") {
		t.Errorf("got %v, want probe.sum:3", err)
	}
}
