package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
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

func TestDevicesListsSimPresetsAndLocal(t *testing.T) {
	code, out, errOut := simCmd(t, "devices", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list []lab.DeviceInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("devices --json: %v\n%s", err, out)
	}
	byID := map[string]lab.DeviceInfo{}
	for _, d := range list {
		byID[d.ID] = d
	}
	for _, id := range []string{"local", "sim:pixel", "sim:nexus5"} {
		if _, ok := byID[id]; !ok {
			t.Errorf("devices: %s missing from %s", id, out)
		}
	}
	for _, c := range []string{"governor", "restore_snapshot", "kill_app", "dismiss_dialogs", "clock_reset", "proxy", "tmpfs", "drop_caches", "probe"} {
		if !byID["sim:pixel"].Has(c) {
			t.Errorf("sim:pixel lacks capability %s", c)
		}
	}
	if !byID["local"].Has("probe") {
		t.Error("local should offer the probe")
	}
	if !byID["local"].Has("governor") && !strings.Contains(strings.Join(byID["local"].Notes, " "), "cpufreq") {
		t.Errorf("local without governor must say why: %v", byID["local"].Notes)
	}
	code, out, _ = simCmd(t, "devices")
	if code != 0 || !strings.Contains(out, "sim:nexus5") || !strings.Contains(out, "CAPABILITIES") {
		t.Errorf("devices table:\n%s", out)
	}
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

func TestTuneRecommendsBelowThrottlingAndSaves(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	for _, p := range sim.Presets() {
		code, out, errOut := simCmd(t, "tune", "sim:"+p.Name, "--json")
		if code != 0 {
			t.Fatalf("tune %s: exit %d\n%s", p.Name, code, errOut)
		}
		if !regexp.MustCompile(`(?m)^\[ *1/\d+\] unstable`).MatchString(errOut) || !strings.Contains(errOut, "saved ") {
			t.Errorf("tune %s: no progress or save message on stderr:\n%s", p.Name, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var res struct {
			Recommended *lab.GovernorProfile `json:"recommended"`
			Candidates  []struct {
				Profile lab.GovernorProfile `json:"profile"`
				Summary struct {
					Verdict    string  `json:"verdict"`
					MeanMFLOPS float64 `json:"mean_mflops"`
				} `json:"summary"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.Recommended == nil {
			t.Fatalf("tune %s --json last line: %v\n%s", p.Name, err, lines[len(lines)-1])
		}
		if res.Candidates[0].Profile.Name != "stock" || res.Candidates[0].Summary.Verdict != "unstable" {
			t.Errorf("%s: stock candidate %+v should come first and be unstable", p.Name, res.Candidates[0])
		}
		var freqs []int
		for _, c := range res.Recommended.Clusters {
			freqs = append(freqs, c.MaxKHz)
		}
		if st := p.SteadyTempC(freqs, res.Recommended.GPU.MaxHz); st >= p.Thermal.TripC {
			t.Errorf("%s: recommended %v settles at %.1f °C, not below the %.0f °C throttling point", p.Name, freqs, st, p.Thermal.TripC)
		}
		best := 0.0
		for _, c := range res.Candidates {
			if c.Summary.Verdict == "stable" && c.Summary.MeanMFLOPS > best {
				best = c.Summary.MeanMFLOPS
			}
		}
		saved := filepath.Join(cfg, "perflab", "profiles", governor.FileName(p.Model))
		b, err := os.ReadFile(saved)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		var tuned governor.Tuned
		if err := json.Unmarshal(b, &tuned); err != nil || !reflect.DeepEqual(tuned.Recommended, *res.Recommended) {
			t.Errorf("%s: saved profile differs: %v", p.Name, err)
		}
		// "recommended" now means the tuned profile, and it checks stable.
		code, _, sum := checkJSON(t, "sim:"+p.Name, "--profile", "recommended")
		var mean float64
		json.Unmarshal(sum["mean_mflops"], &mean)
		if code != 0 || mean < 0.98*best {
			t.Errorf("%s: check of the tuned profile: exit %d, %.0f MFLOPS vs best stable candidate %.0f", p.Name, code, mean, best)
		}
	}
}
