package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A run whose builds the device cannot run (commands on a simulated phone),
// that asks for a metric the device cannot give (a simulated phone
// measures startup_ms and bytes_written only), or for controls it cannot
// apply (tmpfs on the local host, a profile the phone does not know),
// exits with an error naming the device and the field, and leaves no
// session file behind: neither in the session directory nor at --out.
func TestRunRefusesWithoutASession(t *testing.T) {
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	apps := map[string]any{"control": map[string]any{"app": "feed"}, "treatment": map[string]any{"app": "feed"}}
	commands := map[string]any{"control": map[string]any{"command": []string{"true"}}, "treatment": map[string]any{"command": []string{"true"}}}
	tests := []struct {
		name string
		exp  map[string]any // nil: the commands true and true
		args []string
		want []string
	}{
		{"sim", nil, []string{"--device", "sim:pixel"},
			[]string{"device sim:pixel cannot run the builds: builds.control.app: a sim build names a simulated app"}},
		{"pool of sims", nil, []string{"--device", "sim:pixel", "--device", "sim:pixel#2"},
			[]string{"device sim:pixel cannot run the builds: builds.control.app: ", "device sim:pixel#2 cannot run the builds: builds.control.app: "}},
		{"sim, --out", nil, []string{"--device", "sim:pixel", "--out", "OUT"},
			[]string{"device sim:pixel cannot run the builds: builds.control.app: "}},
		{"sim metric", map[string]any{"device": "sim:pixel", "builds": apps, "metrics": []string{"cpu_ms"}}, nil,
			[]string{`device sim:pixel cannot measure the metrics: metrics[0]: "cpu_ms" is not measured here (known: [startup_ms bytes_written])`}},
		{"sim metric, --out", map[string]any{"device": "sim:pixel", "builds": apps, "metrics": []string{"startup_ms", "cpu_ms"}}, []string{"--out", "OUT"},
			[]string{`device sim:pixel cannot measure the metrics: metrics[1]: "cpu_ms" is not measured here`}},
		{"pool of sims, metric", map[string]any{"devices": []string{"sim:pixel", "sim:pixel#2"}, "builds": apps, "metrics": []string{"cpu_ms"}}, nil,
			[]string{`device sim:pixel cannot measure the metrics: metrics[0]: "cpu_ms"`, `device sim:pixel#2 cannot measure the metrics: metrics[0]: "cpu_ms"`}},
		{"local metric typo", map[string]any{"builds": commands, "metrics": []string{"wall_ms", "usr_ms"}}, nil,
			[]string{`device local cannot measure the metrics: metrics[1]: "usr_ms" is not measured here; did you mean "user_ms"?`}},
		{"local tmpfs", map[string]any{"builds": commands, "controls": map[string]any{"tmpfs": true}}, nil,
			[]string{"device local cannot apply the controls: controls.tmpfs: the local device cannot do this"}},
		{"local pin_cpu, --out", map[string]any{"builds": commands, "controls": map[string]any{"pin_cpu": 8191}}, []string{"--out", "OUT"},
			[]string{"device local cannot apply the controls: controls.pin_cpu: "}},
		{"sim governor", map[string]any{"device": "sim:pixel", "builds": apps, "controls": map[string]any{"governor": "nosuch"}}, nil,
			[]string{`device sim:pixel cannot apply the controls: controls.governor: unknown profile "nosuch"`}},
		{"pool of sims, governor", map[string]any{"devices": []string{"sim:pixel", "sim:pixel#2"}, "builds": apps, "controls": map[string]any{"governor": "nosuch"}}, nil,
			[]string{"device sim:pixel cannot apply the controls: controls.governor: ", "device sim:pixel#2 cannot apply the controls: controls.governor: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, outDir := t.TempDir(), t.TempDir()
			args := []string{"run", "--headless"}
			if tt.exp != nil {
				args = append(args, writeExperiment(t, tt.exp))
			}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "OUT", filepath.Join(outDir, "s.jsonl")))
			}
			if tt.exp == nil {
				args = append(args, "--", "true", "true")
			}
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
