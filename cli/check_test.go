package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/sim"
)

// simCmd runs a perflab command in-process with a private config dir.
func simCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = dispatch(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func checkJSON(t *testing.T, args ...string) (int, []map[string]json.RawMessage, map[string]json.RawMessage) {
	t.Helper()
	code, out, errOut := simCmd(t, append([]string{"check", "--json"}, args...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		t.Fatalf("check %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
	}
	var samples []map[string]json.RawMessage
	for _, l := range lines[:len(lines)-1] {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("sample line %q: %v", l, err)
		}
		samples = append(samples, m)
	}
	var last map[string]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("summary line %q: %v", lines[len(lines)-1], err)
	}
	return code, samples, last["summary"]
}

func keysOf(m map[string]json.RawMessage) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func TestCheckJSONContractAndVerdicts(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, preset := range sim.PresetNames() {
		code, samples, sum := checkJSON(t, "sim:"+preset)
		if len(samples) != 600 {
			t.Errorf("%s: default 10-minute window gave %d samples", preset, len(samples))
		}
		if got, want := keysOf(samples[0]), []string{"freq_khz", "mflops", "t", "temp_c"}; !reflect.DeepEqual(got, want) {
			t.Errorf("sample keys %v, want %v", got, want)
		}
		if got, want := keysOf(sum), []string{"cv", "drift_pct_per_min", "mean_mflops", "reasons", "steps", "throttle_events", "verdict"}; !reflect.DeepEqual(got, want) {
			t.Errorf("summary keys %v, want %v", got, want)
		}
		if code != exitUnstable || string(sum["verdict"]) != `"unstable"` {
			t.Errorf("%s stock: exit %d, verdict %s; want unstable", preset, code, sum["verdict"])
		}
		code, samples, sum = checkJSON(t, "sim:"+preset, "--profile", "recommended", "--duration", "5m")
		if code != 0 || string(sum["verdict"]) != `"stable"` || len(samples) != 300 || string(sum["reasons"]) != "[]" {
			t.Errorf("%s recommended: exit %d, %d samples, summary %v", preset, code, len(samples), sum)
		}
	}
}

func TestCheckTextAndErrors(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	code, out, _ := simCmd(t, "check", "sim:nexus5", "--profile", "max", "--duration", "3m")
	if code != exitUnstable || !strings.Contains(out, "verdict: unstable") || !strings.Contains(out, "throttling") ||
		!strings.Contains(out, "original governor settings restored") || !strings.Contains(out, "┤") {
		t.Errorf("text check: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check"}, 2, "missing DEVICE"},
		{[]string{"check", "sim:nope"}, 1, `no sim preset "nope"`},
		{[]string{"check", "sim:pixel", "--profile", "fastest"}, 1, "unknown profile"},
		{[]string{"check", "sim:pixel", "--profile", `{"clusters":[{"cpus":[9],"governor":"performance"}]}`}, 1, "no cpufreq CPU 9"},
		{[]string{"check", "sim:pixel", "--interval", "0s"}, 2, "--interval"},
		{[]string{"tune", "sim:pixel", "--steps", "0"}, 2, "--steps"},
	} {
		code, _, errOut := simCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	for _, cmd := range []string{"devices", "check", "tune"} {
		code, _, errOut := simCmd(t, cmd, "--help")
		if code != 0 || !strings.Contains(errOut, "Examples:") {
			t.Errorf("%s --help: exit %d\n%s", cmd, code, errOut)
		}
	}
}

// TestCheckLocalMeasuresRealMFLOPS runs the real probe on this host.
func TestCheckLocalMeasuresRealMFLOPS(t *testing.T) {
	code, samples, sum := checkJSON(t, "local", "--duration", "2s", "--interval", "500ms", "--size", "128")
	if len(samples) != 4 {
		t.Fatalf("local: %d samples (exit %d)", len(samples), code)
	}
	for _, s := range samples {
		var m float64
		json.Unmarshal(s["mflops"], &m)
		if m < 50 {
			t.Errorf("local sample %v: implausible MFLOPS", s)
		}
	}
	var mean float64
	json.Unmarshal(sum["mean_mflops"], &mean)
	t.Logf("local: mean %.0f MFLOPS, verdict %s", mean, sum["verdict"])
	// Locking needs cpufreq: either it works or it says plainly why not.
	if _, err := governor.NewLocal().ReadProfile(context.Background()); err != nil {
		code, _, errOut := simCmd(t, "check", "local", "--duration", "1s",
			"--profile", `{"clusters":[{"cpus":[0],"governor":"performance"}]}`)
		if code != 1 || !strings.Contains(errOut, "cpufreq not present") {
			t.Errorf("local profile without cpufreq: exit %d, %q", code, errOut)
		}
	}
}
