package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
)

var (
	_ lab.Prober     = (*Device)(nil)
	_ lab.Governor   = (*Device)(nil)
	_ lab.CapChecker = (*Device)(nil)
)

// fakeCPUFreq is a sysfs tree with one cluster of two CPUs.
func fakeCPUFreq(t *testing.T) string {
	t.Helper()
	files := map[string]string{governor.CPURoot + "/present": "0-1", governor.CPURoot + "/cpu1/online": "1"}
	for _, cpu := range []string{"0", "1"} {
		for name, v := range map[string]string{"related_cpus": "0 1", "scaling_available_frequencies": "300000 600000 900000",
			"scaling_available_governors": "schedutil performance powersave", "scaling_governor": "schedutil",
			"scaling_min_freq": "300000", "scaling_max_freq": "900000", "scaling_cur_freq": "600000"} {
			files[governor.CPURoot+"/cpu"+cpu+"/cpufreq/"+name] = v
		}
	}
	root := t.TempDir()
	for p, v := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestCapsFollowInterfaces: the local device's probe and governor
// capabilities come from what it implements and what cpufreq allows, with
// a note saying why when the governor cannot be used.
func TestCapsFollowInterfaces(t *testing.T) {
	d := New()
	info := d.Info()
	if !info.Has(lab.CapProbe) {
		t.Errorf("local lacks %s: %v", lab.CapProbe, info.Caps)
	}
	err := d.CapError(lab.CapGovernor)
	if info.Has(lab.CapGovernor) != (err == nil) {
		t.Errorf("caps %v disagree with CapError %v", info.Caps, err)
	}
	if err != nil && !strings.Contains(strings.Join(info.Notes, "\n"), "governor: "+err.Error()) {
		t.Errorf("notes %q do not say why: %v", info.Notes, err)
	}

	d.Local = &governor.Local{Files: governor.OS{Root: t.TempDir()}}
	if err := d.CapError(lab.CapGovernor); err == nil || !strings.Contains(err.Error(), "cpufreq") {
		t.Errorf("no cpufreq: CapError %v", err)
	}
	d.Local = &governor.Local{Files: governor.OS{Root: fakeCPUFreq(t)}}
	if err := d.CapError(lab.CapGovernor); err != nil {
		t.Errorf("writable cpufreq: CapError %v", err)
	}
	if got := lab.DeriveCaps(d); !strings.Contains(strings.Join(got, " "), lab.CapGovernor) {
		t.Errorf("DeriveCaps %v", got)
	}
}

// TestGovernorControl: controls.governor is applied by Setup, recorded in
// a settings event, and put back by Close; without cpufreq Setup says so.
func TestGovernorControl(t *testing.T) {
	ctx := context.Background()
	root := fakeCPUFreq(t)
	exp := func() *lab.Experiment {
		return &lab.Experiment{Device: "local", Trials: 1, Order: lab.OrderFixed, Builds: map[string]lab.Build{
			lab.ArmControl: {Command: []string{"true"}}, lab.ArmTreatment: {Command: []string{"true"}}},
			Controls: lab.Controls{Governor: json.RawMessage(`{"name":"low","clusters":[{"cpus":[0,1],"governor":"powersave","min_khz":300000,"max_khz":300000}]}`)}}
	}
	maxFreq := filepath.Join(root, governor.CPURoot, "cpu0/cpufreq/scaling_max_freq")
	read := func() string { b, _ := os.ReadFile(maxFreq); return strings.TrimSpace(string(b)) }

	d := New()
	d.Local = &governor.Local{Files: governor.OS{Root: root}}
	evs, err := d.Setup(ctx, exp())
	if err != nil {
		t.Fatal(err)
	}
	var applied *lab.GovernorProfile
	for _, e := range evs {
		if e.Settings != nil && e.Settings.Profile != nil {
			applied = e.Settings.Profile
		}
	}
	if applied == nil || applied.Name != "low" || read() != "300000" {
		t.Errorf("after Setup: profile %+v, max freq %s", applied, read())
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if read() != "900000" {
		t.Errorf("after Close max freq %s, want 900000 back", read())
	}

	d = New()
	d.Local = &governor.Local{Files: governor.OS{Root: t.TempDir()}}
	if _, err := d.Setup(ctx, exp()); err == nil || !strings.Contains(err.Error(), "controls.governor: ") || !strings.Contains(err.Error(), "cpufreq") {
		t.Errorf("Setup without cpufreq: %v", err)
	}
}
