package tui

import (
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestDomainEventsGoToTheirOwner: a device listing that arrives while the
// build picker is in front still reaches the device picker, so going back
// shows the devices instead of "listing devices…" for ever.
func TestDomainEventsGoToTheirOwner(t *testing.T) {
	m := sized(New(Options{Now: fixedNow}), 80, 24)
	m.Update(deviceChosenMsg{device: simInfo()})
	if m.screen != screenBuilds {
		t.Fatalf("screen %d, want the build picker", m.screen)
	}
	nexus := simInfo()
	nexus.ID = "sim:nexus5"
	m.Update(devicesListedMsg{devices: []lab.DeviceInfo{simInfo(), nexus}})
	press(t, m, "esc")
	if s := screenText(m); m.screen != screenDevices || strings.Contains(s, "listing devices") || !strings.Contains(s, "sim:nexus5") {
		t.Errorf("back on the device picker after a listing arrived behind it:\n%s", s)
	}
}

// TestHelpIsTheFocusedPanes: the help bar lists the focused pane's keys
// and then the global ones; while a prompt has the keys, only its own.
func TestHelpIsTheFocusedPanes(t *testing.T) {
	m, _, _, _ := liveModel(t, 120, 40)
	short := func() []string {
		var out []string
		for _, b := range m.paneHelp().ShortHelp() {
			if b.Enabled() {
				out = append(out, b.Help().Key)
			}
		}
		return out
	}
	if got := strings.Join(short(), " "); got != "o p c n x ? q" {
		t.Errorf("run dashboard help %q", got)
	}
	press(t, m, "n")
	if got := strings.Join(short(), " "); got != "enter esc" {
		t.Errorf("note prompt help %q", got)
	}
}
