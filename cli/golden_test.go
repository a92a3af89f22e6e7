package cli

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

func init() {
	// Other test files or imported packages (teatest's golden) may own -update.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata")
	}
}

// simGolden compares got with cli/testdata/name, or rewrites it with -update.
func simGolden(t *testing.T, name, got string) {
	t.Helper()
	dir := filepath.Join(pkgDir, "testdata")
	path := filepath.Join(dir, name)
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("output differs from %s (go test -run %s -update rewrites it):\n--- got\n%s\n--- want\n%s", path, t.Name(), got, want)
	}
}

// TestCheckAndTuneTextGolden pins the rendered text of check (chart,
// progress lines, verdict) and tune (progress, recommendation) on a seeded
// simulated phone.
func TestCheckAndTuneTextGolden(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	code, out, _ := simCmd(t, "check", "sim:nexus5", "--duration", "4m")
	if code != exitUnstable {
		t.Errorf("stock check exit %d", code)
	}
	simGolden(t, "check-nexus5-stock.golden", out)
	code, out, _ = simCmd(t, "check", "sim:nexus5", "--profile", "recommended", "--duration", "4m")
	if code != 0 {
		t.Errorf("recommended check exit %d", code)
	}
	simGolden(t, "check-nexus5-recommended.golden", out)
	code, out, _ = simCmd(t, "tune", "sim:nexus5", "--no-save")
	if code != 0 {
		t.Errorf("tune exit %d", code)
	}
	simGolden(t, "tune-nexus5.golden", out)
}
