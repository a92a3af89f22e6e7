package probebin

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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

// TestEmbeddedProbeIsCurrent rebuilds the probe the way go generate does
// and fails when the checked-in builds differ: run go generate.
func TestEmbeddedProbeIsCurrent(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	dir := t.TempDir()
	for _, tg := range Targets() {
		out := filepath.Join(dir, tg.ABI)
		args := append([]string{"build"}, BuildFlags...)
		cmd := exec.Command(gobin, append(args, "-o", out, "../../probe/cmd/perflab-probe")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+tg.GOARCH, "GOARM="+tg.GOARM)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", tg.ABI, err, b)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, tg.Binary) {
			t.Errorf("%s: the checked-in perflab-probe is stale (%d bytes, fresh build %d): run go generate ./lab/adb/probebin", tg.ABI, len(tg.Binary), len(got))
		}
	}
}
