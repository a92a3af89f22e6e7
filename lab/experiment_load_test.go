package lab

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		{"sequential_trim", `{` + b + `,"sequential_trim":0.4}`, `sequential_trim: 0.4 is too large (max 0.25): the share of the log ratios cut from each end`},
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

func TestParseExperimentBounds(t *testing.T) {
	b := `"builds":{"control":{"command":["true"]},"treatment":{"command":["true"]}}`
	sim := func(effect string) string {
		return `"device":"sim:pixel","builds":{"control":{"app":"feed"},"treatment":{"app":"feed","effect_pct":` + effect + `}}`
	}
	tests := []struct {
		name, src, want string
		large           bool // the error wraps ErrTooLarge
	}{
		{"trials 2^63-1", `{` + b + `,"trials":9223372036854775807}`, "trials: 9223372036854775807 is too large (max 100000)", true},
		{"trials 2^62", `{` + b + `,"trials":4611686018427387904}`, "trials: 4611686018427387904 is too large (max 100000)", true},
		{"trials beyond int64", `{` + b + `,"trials":99999999999999999999}`, "trials: 99999999999999999999 is too large (max 100000)", true},
		{"trials 1e30", `{` + b + `,"trials":1e30}`, "trials: 1e30 is too large (max 100000)", true},
		{"trials just over", `{` + b + `,"trials":100001}`, "trials: 100001 is too large (max 100000)", true},
		{"warmup 2^63-1", `{` + b + `,"warmup":9223372036854775807}`, "warmup: 9223372036854775807 is too large (max 10000)", true},
		{"warmup beyond int64", `{` + b + `,"warmup":1e19}`, "warmup: 1e19 is too large (max 10000)", true},
		{"trial_timeout overflowing time.Duration", `{` + b + `,"trial_timeout":9.3e9}`, "trial_timeout: 9.3e+09 is too large (max 604800) seconds (0 means none)", true},
		{"trial_timeout 8 days", `{` + b + `,"trial_timeout":691200}`, "trial_timeout: 691200 is too large (max 604800)", true},
		{"trial_timeout beyond float64", `{` + b + `,"trial_timeout":1e400}`, "trial_timeout: 1e400 is too large (it does not fit a 64-bit float)", true},
		{"pin_cpu huge", `{` + b + `,"controls":{"pin_cpu":100000}}`, "controls.pin_cpu: 100000 is too large (max 8191)", true},
		{"pin_cpu beyond int64", `{` + b + `,"controls":{"pin_cpu":1e20}}`, "controls.pin_cpu: 1e20 is too large (max 8191)", true},
		{"seed beyond int64", `{` + b + `,"seed":1e20}`, "seed: 1e20 is too large (max 9223372036854775807)", true},
		{"trials very negative", `{` + b + `,"trials":-1e20}`, "trials: -1e20 is too small", false},
		{"effect_pct huge", `{` + sim("1e9") + `}`, "builds.treatment.effect_pct: 1e+09 is too large (max 1000)", true},
		{"effect_pct -100", `{` + sim("-100") + `}`, "builds.treatment.effect_pct: -100 is too small (want more than -100)", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseExperiment([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if errors.Is(err, ErrTooLarge) != tc.large {
				t.Errorf("errors.Is(%v, ErrTooLarge) = %t, want %t", err, !tc.large, tc.large)
			}
		})
	}
	// The bounds themselves are accepted.
	for _, src := range []string{
		`{` + b + `,"trials":100000,"warmup":10000,"trial_timeout":604800,"controls":{"pin_cpu":8191},"seed":9223372036854775807}`,
		`{` + sim("1000") + `}`, `{` + sim("-99.9") + `}`,
	} {
		if _, err := ParseExperiment([]byte(src)); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
}

func TestCheckRangeAndDuration(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{CheckRange("--aa", 100001, 1, MaxStudyRuns), "--aa: 100001 is too large (max 100000)"},
		{CheckRange("--aa", 0, 1, MaxStudyRuns), "--aa: 0 is too small (min 1)"},
		{CheckRange("--aa", 7, 1, MaxStudyRuns), ""},
		{CheckRange("x", math.NaN(), 0, 1), "x: NaN is not a number"},
		{CheckRange("x", math.Inf(1), 0, 1), "x: +Inf is too large (max 1)"},
		{CheckRange[int64]("--seed", math.MinInt64, 0, 1), "--seed: -9223372036854775808 is too small (min 0)"},
		{CheckDuration("--duration", 25*time.Hour), "--duration: 25h0m0s is too large (max 24h0m0s)"},
		{CheckDuration("--duration", -time.Second), "--duration: -1s is too small (min 0s)"},
		{CheckDuration("--duration", time.Duration(math.MaxInt64)), "--duration: 2562047h47m16.854775807s is too large"},
		{CheckDuration("--duration", MaxDuration), ""},
	}
	for _, tc := range tests {
		got := ""
		if tc.err != nil {
			got = tc.err.Error()
		}
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestParseProfileEvery: "profile": {"every": K} is profile true with
// profile_every K, which the session's header keeps; true and false as
// before; a bad K or another field is an error naming the field.
func TestParseProfileEvery(t *testing.T) {
	base := `{"device": "sim:pixel", "builds": {"control": {"app": "feed"}, "treatment": {"app": "feed"}}, "profile": `
	for in, want := range map[string][2]int{`{"every": 4}`: {1, 4}, `{"every": 1}`: {1, 1}, `true`: {1, 0}, `false`: {0, 0}} {
		e, err := ParseExperiment([]byte(base + in + `}`))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := [2]int{btoi(e.Profile), e.ProfileEvery}; got != want {
			t.Errorf("%s: profile, every %v, want %v", in, got, want)
		}
		data, _ := json.Marshal(e)
		back, err := ParseExperiment(data)
		if err != nil || back.Profile != e.Profile || back.ProfileEvery != e.ProfileEvery {
			t.Errorf("%s: round trip %s: %v", in, data, err)
		}
	}
	if e, _ := ParseExperiment([]byte(base + `{"every": 4}}`)); !e.ProfiledRound(0) || e.ProfiledRound(3) || !e.ProfiledRound(8) {
		t.Error("ProfiledRound: want rounds 0, 4, 8, ...")
	}
	for in, want := range map[string]string{`{"every": 0}`: "profile.every", `{"every": 2.5}`: "profile.every", `{"each": 2}`: `unknown field "each"`, `{"every": "x"}`: "whole number"} {
		if _, err := ParseExperiment([]byte(base + in + `}`)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", in, err, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
