package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestSuiteBuildsIgnoreTheCheckoutPath: one revision checked out at two
// paths of different lengths builds byte-identical test binaries
// (-trimpath), so an A/A run compares one program with itself and an A/B
// run's two sides differ by their code only, not by where they were
// checked out (without it, two builds of one VictoriaMetrics revision
// differed by 25% in one benchmark, every round: docs/suite.md).
func TestSuiteBuildsIgnoreTheCheckoutPath(t *testing.T) {
	t.Parallel()
	repo := suiteRepo(t)
	other := filepath.Join(t.TempDir(), "a", "much", "longer", "checkout")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", repo, other).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	bundle := t.TempDir()
	c := suiteConfig{pkgs: []string{"."}, bench: ".", platforms: []string{lab.HostPlatform()}}
	sides := []*suiteSide{{dir: repo}, {dir: other}}
	for i, s := range sides {
		if err := buildSide(context.Background(), s, i, c, bundle); err != nil {
			t.Fatal(err)
		}
		if len(s.bins) != 1 {
			t.Fatalf("side %d: %d test binaries", i, len(s.bins))
		}
	}
	read := func(s *suiteSide) []byte {
		b, err := os.ReadFile(filepath.Join(bundle, lab.HostPlatform(), s.bins[0].rel, s.bins[0].name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, b := read(sides[0]), read(sides[1]); !bytes.Equal(a, b) {
		t.Errorf("the test binaries of one revision at %s and %s differ (%d and %d bytes)", repo, other, len(a), len(b))
	}
}
