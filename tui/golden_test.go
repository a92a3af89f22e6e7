package tui

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/study"
)

// updating reports whether -update was given. The flag itself is defined
// by charmbracelet/x/exp/golden, which teatest imports.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// scenes builds each screen worth a golden file at a given size.
var scenes = []struct {
	name  string
	build func(t *testing.T, w, h int) *Model
}{
	{"devices", func(t *testing.T, w, h int) *Model {
		m := sized(New(Options{Device: "sim:pixel", Now: fixedNow}), w, h)
		nexus := simInfo()
		nexus.ID, nexus.Model = "sim:nexus5", "Nexus 5 (simulated)"
		off := lab.DeviceInfo{ID: "adb:0a1b2c3d", Backend: "adb", Model: "Pixel 7", State: "unauthorized", Server: "127.0.0.1:5037"}
		loc := localInfo()
		loc.Notes = []string{"cpufreq not writable: needs root"}
		m.Update(devicesListedMsg{devices: []lab.DeviceInfo{loc, off, nexus, simInfo()}})
		return m
	}},
	{"builds", func(t *testing.T, w, h int) *Model {
		ready := []BuildChoice{
			{Label: "feed", Detail: "a news-feed app", Build: lab.Build{Name: "feed", App: "feed"}},
			{Label: "feed+1%", Detail: "feed with a true effect of +1%", Build: lab.Build{Name: "feed+1%", App: "feed", EffectPct: 1}},
			{Label: "notes", Detail: "a note-taking app", Build: lab.Build{Name: "notes", App: "notes"}},
		}
		m := sized(New(Options{Now: fixedNow, Backend: Backend{Builds: func(lab.DeviceInfo) []BuildChoice { return ready }}}), w, h)
		m.Update(deviceChosenMsg{device: simInfo()})
		press(t, m, "enter")
		return m
	}},
	{"controls", func(t *testing.T, w, h int) *Model {
		dev := simInfo()
		dev.Caps = dev.Caps[:len(dev.Caps)-2] // no drop_caches, no probe
		m := sized(NewRun(Options{Now: fixedNow}, dev, synthPlan(50)), w, h)
		m.controls.profiles = []string{"recommended"}
		press(t, m, "space", "down", "space", "down")
		return m
	}},
	{"live", func(t *testing.T, w, h int) *Model {
		m, _, ch, _ := liveModel(t, w, h)
		evs := synthEvents(20, 40, false)
		_, cmd := m.Update(eventsArrivedMsg{stream: 1, events: evs})
		ch <- relayItem{} // lets the re-armed wait return at once
		m.Update(reportFrom(t, cmd))
		return m
	}},
	{"stability", func(t *testing.T, w, h int) *Model {
		m, _, _, _ := liveModel(t, w, h)
		m.dash.chart.stabFor = func(s []lab.ProbeSample) (string, []string) {
			return fmt.Sprintf("stable over %d samples", len(s)), []string{"verdict stable: CV 1.8%, drift +0.1%/min, no steps"}
		}
		m.Update(eventsArrivedMsg{stream: 1, events: synthEvents(0, 60, false)[:60]})
		return m
	}},
	{"replay", func(t *testing.T, w, h int) *Model {
		evs := synthEvents(30, 10, true)
		m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), synthPlan(30), evs, 10, []string{"line 9: unexpected end of JSON input"}), w, h)
		press(t, m, "G")
		return m
	}},
	{"check", func(t *testing.T, w, h int) *Model {
		m := sized(New(Options{Now: fixedNow}), w, h)
		m.device = simInfo()
		m.check = m.newCheckDash()
		m.screen = screenCheck
		m.Update(runStartedMsg{run: &liveRun{stream: 0, cancel: func() {}, events: make(chan relayItem), device: simInfo()}})
		m.check.Update(eventsArrivedMsg{stream: 0, events: synthEvents(0, 45, false)[:45]})
		return m
	}},
	{"pool", func(t *testing.T, w, h int) *Model {
		m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), synthPoolPlan(30), synthPoolEvents(20), 10, nil), w, h)
		press(t, m, "G")
		return m
	}},
	{"live-controls", func(t *testing.T, w, h int) *Model {
		m, _, _, _ := liveModel(t, w, h)
		press(t, m, "c", "down", "space")
		return m
	}},
	{"help", func(t *testing.T, w, h int) *Model {
		m, _, _, _ := liveModel(t, w, h)
		press(t, m, "?")
		return m
	}},
	{"controls-validate", func(t *testing.T, w, h int) *Model {
		m := sized(NewRun(Options{Now: fixedNow}, simInfo(), synthPlan(10)), w, h)
		selectMode(t, m, StudyValidate)
		press(t, m, "down", "left") // K: 200 → 100
		return m
	}},
	{"study-live", func(t *testing.T, w, h int) *Model {
		m, _ := studyModel(t, w, h, StudyValidate)
		ups := aaUpdates(30, 400, 4, 17)
		failed := progress("aa", 30, 31, 400, "failed")
		failed.Progress.Error = "open device sim:pixel: connection refused"
		m.Update(studyUpdatedMsg{stream: m.stream, updates: append(ups, failed)})
		return m
	}},
	{"study-validate", func(t *testing.T, w, h int) *Model {
		m, _ := studyModel(t, w, h, StudyValidate)
		m.Update(studyUpdatedMsg{stream: m.stream, updates: append(aaUpdates(40, 40, 3, 9), study.Update{Validation: fakeValidation()}), closed: true})
		return m
	}},
	{"study-order", func(t *testing.T, w, h int) *Model {
		m, _ := studyModel(t, w, h, StudyOrder)
		m.Update(studyUpdatedMsg{stream: m.stream, updates: []study.Update{progress("random", 9, 20, 20, "no change"), {Order: fakeOrder()}}, closed: true})
		return m
	}},
	{"note", func(t *testing.T, w, h int) *Model {
		m, _, _, _ := liveModel(t, w, h)
		m.Update(eventsArrivedMsg{stream: 1, events: synthEvents(3, 0, false)})
		press(t, m, "n", "h", "i")
		return m
	}},
}

// addScene adds a scene from another test file.
func addScene(name string, build func(t *testing.T, w, h int) *Model) {
	scenes = append(scenes, struct {
		name  string
		build func(t *testing.T, w, h int) *Model
	}{name, build})
}

// TestGoldenScreens compares each screen, ANSI stripped, with
// testdata/<scene>-<w>x<h>.golden; -update rewrites them.
func TestGoldenScreens(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for _, sc := range scenes {
			name := fmt.Sprintf("%s-%dx%d", sc.name, size[0], size[1])
			t.Run(name, func(t *testing.T) {
				checkGolden(t, name, screenText(sc.build(t, size[0], size[1])))
			})
		}
	}
}

// checkGolden compares a screen with testdata/NAME.golden; -update
// rewrites it.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./tui -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestScreensFitEverySize checks that every screen fills the window exactly,
// no line wider than it, from 80×24 up, and survives a resize.
func TestScreensFitEverySize(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {81, 25}, {100, 30}, {120, 40}, {160, 50}, {240, 70}} {
		for _, sc := range scenes {
			m := sc.build(t, size[0], size[1])
			check := func(w, h int) {
				t.Helper()
				out := m.render()
				lines := strings.Split(out, "\n")
				if len(lines) != h {
					t.Errorf("%s at %dx%d: %d lines", sc.name, w, h, len(lines))
				}
				for i, l := range lines {
					if lw := lipgloss.Width(l); lw > w {
						t.Errorf("%s at %dx%d: line %d is %d wide: %q", sc.name, w, h, i+1, lw, l)
					}
				}
			}
			check(size[0], size[1])
			sized(m, 80, 24)
			check(80, 24)
		}
	}
}
