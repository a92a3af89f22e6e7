package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

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
