package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const minimalExp = `{"device":"local","builds":{"control":{"command":["true"]},"treatment":{"command":["true"]}}}`

func TestParseExperimentIssueShape(t *testing.T) {
	src := `{"device":"local",
 "builds":{"control":{"command":["sh","-c","sleep 0"]},"treatment":{"command":["sh","-c","sleep 0"]}},
 "trials":20,"warmup":1,"order":"random","seed":7,
 "controls":{"prepare":[],"cleanup":[],"state_dir":"","aslr":true,"pin_cpu":-1},
 "metrics":["wall_ms"],"alpha":0.05,"confidence":0.95}`
	exp, err := ParseExperiment([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if exp.Trials != 20 || exp.Warmup != 1 || exp.Order != "random" || exp.Seed != 7 || exp.Controls.PinnedCPU() != -1 || exp.Controls.ASLROff() {
		t.Errorf("parsed %+v", exp)
	}
	if got := exp.Builds["treatment"].Command; len(got) != 3 || got[2] != "sleep 0" {
		t.Errorf("treatment command %q", got)
	}
}

func TestParseExperimentDefaults(t *testing.T) {
	exp, err := ParseExperiment([]byte(`{"builds":{"control":{"command":["true"]},"treatment":{"command":["true"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if exp.Device != DefaultDevice || exp.Trials != DefaultTrials || exp.Warmup != DefaultWarmup ||
		exp.Order != DefaultOrder || exp.Alpha != DefaultAlpha || exp.Confidence != DefaultConfidence {
		t.Errorf("defaults not applied: %+v", exp)
	}
	if exp.Seed == 0 {
		t.Error("a missing seed should get a fresh non-zero one")
	}
	// Explicit zeros stay zeros where zero is valid.
	exp, err = ParseExperiment([]byte(`{"builds":{"control":{"command":["true"]},"treatment":{"command":["true"]}},"warmup":0,"seed":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if exp.Warmup != 0 || exp.Seed != 0 {
		t.Errorf("explicit zeros lost: warmup %d seed %d", exp.Warmup, exp.Seed)
	}
}

func TestParseExperimentErrors(t *testing.T) {
	b := `"builds":{"control":{"command":["true"]},"treatment":{"command":["true"]}}`
	tests := []struct {
		name, src, want string
	}{
		{"unknown top field", `{` + b + `,"trails":5}`, `trails: unknown field (did you mean "trials"?)`},
		{"unknown nested field", `{"builds":{"control":{"comand":["x"]},"treatment":{"command":["true"]}}}`, `builds.control.comand: unknown field (did you mean "command"?)`},
		{"unknown control", `{` + b + `,"controls":{"aslr_off":true}}`, `controls.aslr_off: unknown field`},
		{"string for int", `{` + b + `,"trials":"20"}`, `trials: string "20", want a whole number`},
		{"fraction for int", `{` + b + `,"trials":2.5}`, `trials: 2.5 is not a whole number`},
		{"string for list", `{"builds":{"control":{"command":"true"},"treatment":{"command":["true"]}}}`, `builds.control.command: string "true", want a list of strings`},
		{"number in list", `{"builds":{"control":{"command":["sh",1]},"treatment":{"command":["true"]}}}`, `builds.control.command[1]: number 1, want a string`},
		{"string for bool", `{` + b + `,"controls":{"aslr":"no"}}`, `controls.aslr: string "no", want true or false`},
		{"null for int", `{` + b + `,"trials":null}`, `trials: null, want a whole number`},
		{"not an object", `[1,2]`, `must be a JSON object`},
		{"syntax error line", "{\n" + b + ",\n\"trials\": 20,,\n}", `line 3, column`},
		{"cut short", `{` + b, `not a complete JSON object`},
		{"trailing data", `{` + b + `} {}`, `unexpected data after`},
		{"missing treatment", `{"builds":{"control":{"command":["true"]}}}`, `builds.treatment: missing`},
		{"extra build", `{"builds":{"control":{},"treatment":{},"other":{}}}`, `builds.other: unknown build`},
		{"bad order", `{` + b + `,"order":"shuffle"}`, `order: "shuffle", want fixed, alternate or random`},
		{"zero trials", `{` + b + `,"trials":0}`, `trials: 0, want at least 1`},
		{"negative warmup", `{` + b + `,"warmup":-1}`, `warmup: -1`},
		{"alpha range", `{` + b + `,"alpha":5}`, `alpha: 5`},
		{"confidence range", `{` + b + `,"confidence":95}`, `confidence: 95`},
		{"pin_cpu", `{` + b + `,"controls":{"pin_cpu":-3}}`, `controls.pin_cpu: -3`},
		{"proxy mode", `{` + b + `,"controls":{"proxy":"on"}}`, `controls.proxy: "on"`},
		{"empty prepare", `{` + b + `,"controls":{"prepare":[" "]}}`, `controls.prepare[0]: empty command`},
		{"duplicate metric", `{` + b + `,"metrics":["wall_ms","wall_ms"]}`, `metrics[1]: "wall_ms" listed twice`},
		{"timeout", `{` + b + `,"trial_timeout":-1}`, `trial_timeout: -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExperiment([]byte(tt.src))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadExperimentResolvesPaths(t *testing.T) {
	dir := t.TempDir()
	src := `{"builds":{"control":{"command":["./a.sh"]},"treatment":{"command":["./b.sh"],"dir":"sub"}},"controls":{"state_dir":"state"}}`
	path := filepath.Join(dir, "exp.json")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	exp, err := LoadExperiment(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := exp.Builds["control"].Dir; got != dir {
		t.Errorf("control dir %q, want %q", got, dir)
	}
	if got := exp.Builds["treatment"].Dir; got != filepath.Join(dir, "sub") {
		t.Errorf("treatment dir %q", got)
	}
	if got := exp.Controls.StateDir; got != filepath.Join(dir, "state") {
		t.Errorf("state_dir %q", got)
	}
	// Errors name the file.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"trials":"x"}`), 0o644)
	if _, err := LoadExperiment(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": trials:") {
		t.Errorf("error %v, want it to start with the file name and field", err)
	}
}

func TestExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("../examples/local-*.json")
	for _, f := range files {
		if _, err := LoadExperiment(f); err != nil {
			t.Errorf("%v", err)
		}
	}
}
