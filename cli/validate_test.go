package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab/adb/adbtest"
)

// studyCmd runs a perflab command line in process.
func studyCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = dispatch(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

// lastLine decodes the last line of out as a JSON object.
func lastLine(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	return m
}

func keys(m any) []string {
	var k []string
	for x := range m.(map[string]any) {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func TestValidateCommandJSON(t *testing.T) {
	// 40 A/A experiments are too few to judge α = 5% (234 can): the
	// setup does not validate, whatever they show.
	out, errOut, code := studyCmd(t, "validate", "sim:pixel", "--experiment", "examples/sim-order-clean.json", "--aa", "40", "--json")
	if code != exitRegression {
		t.Fatalf("exit %d, want %d (too few to judge)\n%s\n%s", code, exitRegression, out, errOut)
	}
	m := lastLine(t, out)
	for name, want := range map[string][]string{
		"":            {"aa", "effect", "stop", "trial_trend", "trials_used", "variance"},
		"aa":          {"ci_high", "ci_low", "experiments", "false_positives", "rate"},
		"effect":      {"detected", "effect_pct", "experiments", "rate"},
		"trial_trend": {"p", "rho"},
	} {
		obj := any(m)
		if name != "" {
			obj = m[name]
		}
		if got := keys(obj); !reflect.DeepEqual(got, want) {
			t.Errorf("%q keys %v, want %v", name, got, want)
		}
	}
	aa := m["aa"].(map[string]any)
	eff := m["effect"].(map[string]any)
	if aa["experiments"].(float64) != 40 || eff["experiments"].(float64) != 40 || eff["effect_pct"].(float64) != 1 {
		t.Errorf("counts: aa %v effect %v", aa, eff)
	}
	if r := eff["rate"].(float64); r < 0.8 {
		t.Errorf("+1%% detected at rate %v on sim with every control on", r)
	}
	v := m["variance"].(map[string]any)
	if v["metric"] != "startup_ms" || v["control"].(map[string]any)["sd"] == nil {
		t.Errorf("variance %v", v)
	}
	if !strings.Contains(errOut, "40 A/A + 40 effect experiments") {
		t.Errorf("no plan line on stderr:\n%s", errOut)
	}
}

func TestValidateCommandWarnsOnBrokenSetup(t *testing.T) {
	// Fixed order with the app state carried over: A/A experiments "find"
	// regressions far more often than α, and validate says so.
	exp := filepath.Join(t.TempDir(), "fixed.json")
	b, _ := os.ReadFile("examples/sim-order-carryover.json")
	os.WriteFile(exp, bytes.Replace(b, []byte(`"order": "random"`), []byte(`"order": "fixed"`), 1), 0o644)
	out, _, code := studyCmd(t, "validate", "sim:pixel", "--experiment", exp, "--aa", "30", "--effect", "0", "--quiet")
	if code != exitRegression {
		t.Fatalf("exit %d, want %d\n%s", code, exitRegression, out)
	}
	for _, want := range []string{"EXCLUDES α", "warning: the A/A false-positive rate", "TREND: not IID", "Effect  ", "not run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestStudyCommandErrors(t *testing.T) {
	// An adb server nobody runs: a pool selector finds no phone there, a
	// failure to reach the devices (exit 1, as run gives), not of the
	// arguments.
	noADB := fmt.Sprintf("127.0.0.1:%d", adbtest.FreePort(t))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"validate", "sim:pixel"}, exitUsage, "--experiment EXP.json is required"},
		{[]string{"validate", "sim:pixel", "--experiment", "nope.json"}, exitUsage, "nope.json"},
		{[]string{"validate", "sim:pixel", "--experiment", "examples/sim-order-clean.json", "--effect", "lots"}, exitUsage, `--effect "lots"`},
		{[]string{"validate", "sim:pixel", "--experiment", "examples/sim-order-clean.json", "--aa", "-3"}, exitUsage, "positive number"},
		{[]string{"validate", "sim:nokia3310", "--experiment", "examples/sim-order-clean.json", "--aa", "2"}, exitError, "nokia3310"},
		{[]string{"validate", "a", "b", "--experiment", "examples/sim-order-clean.json"}, exitUsage, "want one DEVICE"},
		{[]string{"order", "sim:pixel", "--experiment", "examples/sim-order-clean.json", "--runs", "1"}, exitUsage, "at least 2"},
		{[]string{"order", "sim:pixel", "--experiment", "examples/sim-order-clean.json", "--alpha", "2"}, exitUsage, "--alpha"},
		{[]string{"validate", "adb:model=X", "--experiment", "examples/sim-order-clean.json", "--adb", noADB}, exitError, `no online phone of model "X"`},
		{[]string{"order", "adb:model=X", "--experiment", "examples/sim-order-clean.json", "--adb", noADB}, exitError, `no online phone of model "X"`},
	} {
		_, errOut, code := studyCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	for _, cmd := range []string{"validate", "order"} {
		_, errOut, code := studyCmd(t, cmd, "--help")
		if code != exitOK || !strings.Contains(errOut, "Examples:") || !strings.Contains(errOut, "perflab "+cmd+" sim:pixel") {
			t.Errorf("%s --help: exit %d\n%s", cmd, code, errOut)
		}
	}
}
