package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Numeric flags and experiment fields have upper bounds with errors naming
// them, so huge values never reach a progress bar, an ETA or a Duration.
func TestHugeValuesAreRefusedByName(t *testing.T) {
	dir := t.TempDir()
	exp := func(name, field string) string {
		p := filepath.Join(dir, name)
		src := `{"device":"sim:pixel","builds":{"control":{"app":"feed"},"treatment":{"app":"feed"}},` + field + `}`
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := exp("huge.json", `"trials":9223372036854775807`)
	bigWarm := exp("warm.json", `"warmup":4611686018427387904`)
	longTimeout := exp("timeout.json", `"trial_timeout":9.3e9`)
	ok := "examples/sim-controls-off.json"
	tests := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"run", huge, "--headless"}, exitError, "huge.json: trials: 9223372036854775807 is too large (max 100000)"},
		{[]string{"run", bigWarm, "--headless"}, exitError, "warm.json: warmup: 4611686018427387904 is too large (max 10000)"},
		{[]string{"run", longTimeout, "--headless"}, exitError, "timeout.json: trial_timeout: 9.3e+09 is too large (max 604800) seconds"},
		{[]string{"validate", "--experiment", huge}, exitUsage, "trials: 9223372036854775807 is too large (max 100000)"},
		{[]string{"check", "sim:pixel", "--duration", "1000h"}, exitUsage, "--duration: 1000h0m0s is too large (max 24h0m0s)"},
		{[]string{"check", "sim:pixel", "--interval", "25h"}, exitUsage, "--interval: 25h0m0s is too large (max 24h0m0s)"},
		{[]string{"check", "sim:pixel", "--size", "9223372036854775807"}, exitUsage, "--size: 9223372036854775807 is too large (max 4096)"},
		{[]string{"tune", "sim:pixel", "--steps", "1000"}, exitUsage, "--steps: 1000 is too large (max 64)"},
		{[]string{"tune", "sim:pixel", "--cooldown", "2562047h"}, exitUsage, "--cooldown: 2562047h0m0s is too large (max 24h0m0s)"},
		{[]string{"validate", "--experiment", ok, "--aa", "9223372036854775807"}, exitUsage, "--aa: 9223372036854775807 is too large (max 100000)"},
		{[]string{"validate", "--experiment", ok, "--effect-runs", "100001"}, exitUsage, "--effect-runs: 100001 is too large (max 100000)"},
		{[]string{"validate", "--experiment", ok, "--effect", "1e9%"}, exitUsage, "--effect: 1e+09 is too large (max 1000)"},
		{[]string{"validate", "--experiment", ok, "--parallel", "1000000"}, exitUsage, "--parallel: 1000000 is too large (max 1024)"},
		{[]string{"order", "--experiment", ok, "--runs", "4611686018427387904"}, exitUsage, "--runs: 4611686018427387904 is too large (max 100000)"},
		{[]string{"replay", "x.jsonl", "--speed", "1e300"}, exitUsage, "--speed: 1e+300 is too large (max 1e+06)"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := dispatch(context.Background(), tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, want %d; stderr %q, want it to contain %q", code, tc.code, errb.String(), tc.want)
			}
		})
	}
}
