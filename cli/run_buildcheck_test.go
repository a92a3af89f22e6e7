package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A run whose builds the device cannot run (commands on a simulated phone)
// exits with an error naming the device and the field, and leaves no
// session file behind: neither in the session directory nor at --out.
func TestRunRefusesBuildsWithoutASession(t *testing.T) {
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"sim", []string{"--device", "sim:pixel"},
			[]string{"device sim:pixel cannot run the builds: builds.control.app: a sim build names a simulated app"}},
		{"pool of sims", []string{"--device", "sim:pixel", "--device", "sim:pixel#2"},
			[]string{"device sim:pixel cannot run the builds: builds.control.app: ", "device sim:pixel#2 cannot run the builds: builds.control.app: "}},
		{"sim, --out", []string{"--device", "sim:pixel", "--out", "OUT"},
			[]string{"device sim:pixel cannot run the builds: builds.control.app: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, outDir := t.TempDir(), t.TempDir()
			args := []string{"run", "--headless"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "OUT", filepath.Join(outDir, "s.jsonl")))
			}
			args = append(args, "--", "true", "true")
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+data)
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit %d, want 1\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, dir := range []string{data, outDir} {
				filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						t.Errorf("left %s behind", path)
					}
					return nil
				})
			}
		})
	}
}
