package cli

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlotFlags draws each command's --plot on the simulated phone and
// checks the files are the images their names say.
func TestPlotFlags(t *testing.T) {
	dir := t.TempDir()
	session := filepath.Join(dir, "s.jsonl")
	if _, stderr, code := runPerflab(t, "run", "examples/sim-order-clean.json", "--headless", "--out", session, "--quiet"); code == 1 {
		t.Fatal(stderr)
	}
	cases := []struct {
		name string
		args []string
		text []string // in the SVG
	}{
		{"report.svg", []string{"report", session}, []string{"startup_ms by trial", "control (feed)", "Δ% B vs A the verdict rests on"}},
		{"report.png", []string{"report", session}, nil},
		{"check.svg", []string{"check", "sim:pixel", "--duration", "30s"}, []string{"MFLOPS: check on sim:pixel"}},
		{"validate.svg", []string{"validate", "sim:pixel", "--experiment", "examples/sim-order-clean.json", "--aa", "6", "--effect-runs", "6", "--quiet"},
			[]string{"A/A false positives"}},
		{"order.png", []string{"order", "sim:pixel", "--experiment", "examples/sim-order-clean.json", "--runs", "2", "--quiet"}, nil},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		_, stderr, code := runPerflab(t, append(c.args, "--plot", path)...)
		if code == 1 || !strings.Contains(stderr, "plot written to "+path) {
			t.Errorf("%s: exit %d\n%s", c.name, code, stderr)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(c.name, ".png") {
			if _, err := png.DecodeConfig(strings.NewReader(string(data))); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		for _, s := range append(c.text, "<svg") {
			if !strings.Contains(string(data), s) {
				t.Errorf("%s lacks %q", c.name, s)
			}
		}
	}
	if _, stderr, code := runPerflab(t, "report", session, "--plot", filepath.Join(dir, "x.pdf")); code != 1 || !strings.Contains(stderr, "x.pdf: plot file must end in .svg or .png") {
		t.Errorf("pdf: exit %d: %s", code, stderr)
	}
}
