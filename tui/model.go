// Package tui is perflab's workbench: pick a device and two builds, set the
// noise controls, watch trials, confidence intervals and p-values update
// live, and replay saved sessions. It is the only package that imports
// Bubble Tea; the lab, the analysis and the session format know nothing of it.
package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/engine"
)

// screen is the step of the workbench on show.
type screen int

const (
	screenDevices screen = iota
	screenBuilds
	screenControls
	screenDashboard
	screenStudy
)

// Options configure the workbench.
type Options struct {
	Backend Backend
	// Ctx bounds everything the workbench starts; cancelling it aborts a run.
	Ctx context.Context
	// SessionDir is where new session files go.
	SessionDir string
	// Source is the experiment file the plan came from, recorded in the
	// session header; empty means the workbench's pickers.
	Source string
	// SessionFile names the session file of the first run ("" picks a
	// time-stamped name).
	SessionFile string
	// RecentPath is the recent-builds file ("" keeps no history).
	RecentPath string
	// NoColor draws without colour (NO_COLOR).
	NoColor bool
	// Device preselects a device id in the picker (e.g. "sim:pixel").
	Device string
	// Profiles lists governor profile names offered for a device.
	Profiles func(dev lab.DeviceInfo) []string
	// Instant runs simulated devices in simulated time by default, checks
	// included (tests, quick demos); otherwise they are paced in real time
	// so a run can be watched and steered.
	Instant bool
	// Now stamps session file names (tests fix it).
	Now func() time.Time
}

// Model is the root model: it owns the window size, the global keys, the
// help bar and the screen in front, and routes everything else.
type Model struct {
	opt    Options
	ctx    context.Context
	st     *Styles
	keys   globalKeys
	help   help.Model
	screen screen
	width  int
	height int

	devices  devicesPane
	builds   buildsPane
	controls controlsPane
	dash     *dashboard
	study    *studyDash
	recent   []recentBuild

	device  lab.DeviceInfo
	exp     lab.Experiment
	stream  int
	err     error
	fixedEx bool // the experiment came from a file: builds are set
}

func newModel(opt Options) *Model {
	if opt.Ctx == nil {
		opt.Ctx = context.Background()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	st := NewStyles(true, opt.NoColor)
	m := &Model{opt: opt, ctx: opt.Ctx, st: &st, keys: newGlobalKeys(), help: help.New(), width: 80, height: 24}
	m.help.Styles = st.Help
	m.recent, m.err = loadRecent(opt.RecentPath)
	return m
}

// New returns the workbench opening on the device picker.
func New(opt Options) *Model {
	m := newModel(opt)
	m.devices = newDevicesPane(m.st, opt.Device)
	m.screen = screenDevices
	return m
}

// NewRun returns the workbench opening on the controls of an experiment
// read from a file: device and builds are set, the user reviews the
// controls and starts.
func NewRun(opt Options, dev lab.DeviceInfo, exp lab.Experiment) *Model {
	m := newModel(opt)
	m.devices = newDevicesPane(m.st, dev.ID)
	m.device = dev
	m.exp = exp
	m.fixedEx = true
	m.controls = m.newControls(dev, exp)
	m.screen = screenControls
	return m
}

// NewReplay returns the workbench replaying a saved session's events.
// problems lists lines of the file that could not be read.
func NewReplay(opt Options, dev lab.DeviceInfo, plan lab.Experiment, events []lab.Event, speed float64, problems []string) *Model {
	m := newModel(opt)
	m.device, m.exp = dev, plan
	d := m.newDashboard(modeReplay)
	d.rp = newReplayer(events, speed)
	if len(problems) > 0 {
		d.err = fmt.Errorf("%d unreadable lines skipped: %s", len(problems), strings.Join(problems, "; "))
	}
	d.status = fmt.Sprintf("%d events", len(events))
	m.dash = d
	m.screen = screenDashboard
	return m
}

func (m *Model) profiles(dev lab.DeviceInfo) []string {
	if m.opt.Profiles == nil {
		return nil
	}
	return m.opt.Profiles(dev)
}

// newControls opens the stepper for a run of exp on dev.
func (m *Model) newControls(dev lab.DeviceInfo, exp lab.Experiment) controlsPane {
	p := newControlsPane(m.st, dev, exp, m.profiles(dev), false)
	if m.opt.Instant {
		p.realtime = false
	}
	return p
}

func (m *Model) newDashboard(mode dashMode) *dashboard {
	d := newDashboard(m.st, mode, m.device, m.exp)
	opt := engine.Options(&m.exp)
	d.analyzeFor = func(in []metricInput) panelData {
		return analyze(in, opt)
	}
	d.stabFor = stabilitySummary
	d.ctrl.profiles = m.profiles(m.device)
	d.SetSize(m.width, m.height-1)
	return d
}

// Init lists devices (or starts a replay) and asks for the background colour.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tea.RequestBackgroundColor}
	switch m.screen {
	case screenDevices:
		cmds = append(cmds, listDevices(m.ctx, m.opt.Backend))
	case screenDashboard:
		if m.dash != nil && m.dash.rp != nil {
			cmds = append(cmds, m.dash.rp.play())
		}
	}
	return tea.Batch(cmds...)
}

// Update routes a message: global keys first, then the screen in front.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.resize()
		return m, nil
	case tea.BackgroundColorMsg:
		st := NewStyles(msg.IsDark(), m.opt.NoColor)
		*m.st = st
		m.help.Styles = st.Help
		return m, nil
	case recentSavedMsg:
		if msg.err != nil {
			m.err = fmt.Errorf("saving recent builds: %w", msg.err)
		}
		return m, nil
	case tea.KeyPressMsg:
		if cmd, done := m.globalKey(msg); done {
			return m, cmd
		}
	case refreshDevicesMsg:
		return m, listDevices(m.ctx, m.opt.Backend)
	case deviceChosenMsg:
		return m, m.chooseDevice(msg)
	case buildsDoneMsg:
		return m, m.chooseBuilds(msg)
	case controlsDoneMsg:
		if m.screen == screenControls {
			return m, m.start()
		}
	case studyUpdatedMsg, studyStartedMsg:
		if m.study != nil {
			return m, m.study.Update(msg)
		}
		return m, nil
	}
	var cmd tea.Cmd
	switch m.screen {
	case screenDevices:
		m.devices, cmd = m.devices.Update(msg)
	case screenBuilds:
		m.builds, cmd = m.builds.Update(msg)
	case screenControls:
		m.controls, cmd = m.controls.Update(msg)
	case screenDashboard:
		cmd = m.dash.Update(msg)
	case screenStudy:
		cmd = m.study.Update(msg)
	}
	return m, cmd
}

// globalKey handles help, quit and back; done means the key was consumed.
func (m *Model) globalKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	typing := (m.screen == screenBuilds && m.builds.editing()) || (m.screen == screenDashboard && m.dash.typing()) ||
		(m.screen == screenStudy && m.study.typing())
	if msg.String() == "ctrl+c" {
		if m.screen == screenStudy {
			if m.study.confirmAbort || m.study.quitting {
				m.study.abort(true)
				return tea.Quit, true // a second ctrl+c does not wait for the runs in progress
			}
			return m.study.askQuit(), true
		}
		if m.screen == screenDashboard {
			if m.dash.confirmAbort || m.dash.quitting {
				m.dash.abort(true)
				if !m.dash.running() {
					return tea.Quit, true
				}
				return nil, true
			}
			return m.dash.askQuit(), true
		}
		return tea.Quit, true
	}
	if typing {
		return nil, false
	}
	switch {
	case key.Matches(msg, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
		return nil, true
	case m.help.ShowAll && (key.Matches(msg, m.keys.Back) || key.Matches(msg, m.keys.Quit)):
		m.help.ShowAll = false
		return nil, true
	case key.Matches(msg, m.keys.Quit):
		if m.screen == screenDashboard {
			return m.dash.askQuit(), true
		}
		if m.screen == screenStudy {
			return m.study.askQuit(), true
		}
		return tea.Quit, true
	case key.Matches(msg, m.keys.Back):
		return m.back(), true
	}
	return nil, false
}

// back returns to the previous step of the picking flow.
func (m *Model) back() tea.Cmd {
	switch m.screen {
	case screenBuilds:
		m.screen = screenDevices
	case screenControls:
		if m.fixedEx {
			m.fixedEx = false
			m.screen = screenDevices
			return listDevices(m.ctx, m.opt.Backend)
		}
		m.screen = screenBuilds
	case screenStudy:
		if !m.study.running() {
			m.screen = screenControls
			m.resize()
		}
	case screenDashboard:
		if m.dash.mode == modeCheck {
			if m.dash.running() {
				m.dash.abort(false)
			}
			m.screen = screenDevices
		}
	}
	return nil
}

func (m *Model) chooseDevice(msg deviceChosenMsg) tea.Cmd {
	m.device = msg.device
	if msg.check {
		m.stream++
		m.dash = m.newDashboard(modeCheck)
		m.dash.starting = true
		m.screen = screenDashboard
		return startCheck(m.ctx, m.opt.Backend, m.device, 30, m.device.Has(lab.CapSimTime) && !m.opt.Instant, m.stream)
	}
	var ready []BuildChoice
	if m.opt.Backend.Builds != nil {
		ready = m.opt.Backend.Builds(m.device)
	}
	m.builds = newBuildsPane(m.st, m.device, ready, m.recent)
	m.screen = screenBuilds
	m.resize()
	return nil
}

func (m *Model) chooseBuilds(msg buildsDoneMsg) tea.Cmd {
	exp := m.exp
	exp.Device = m.device.ID
	exp.Builds = map[string]lab.Build{lab.ArmControl: msg.control, lab.ArmTreatment: msg.treatment}
	if exp.Seed == 0 {
		exp.Seed = m.opt.Now().UnixNano() % 1_000_000
	}
	m.exp = exp
	m.controls = m.newControls(m.device, exp)
	m.screen = screenControls
	m.resize()
	b := m.device.Backend
	m.recent = addRecent(m.recent,
		recentBuild{Backend: b, Label: label(msg.control), Build: msg.control},
		recentBuild{Backend: b, Label: label(msg.treatment), Build: msg.treatment})
	return saveRecent(m.opt.RecentPath, m.recent)
}

func label(b lab.Build) string {
	switch {
	case b.Name != "":
		return b.Name
	case b.App != "":
		return fmt.Sprintf("%s %+g%%", b.App, b.EffectPct)
	case b.APK != "":
		return filepath.Base(b.APK)
	}
	return strings.Join(b.Command, " ")
}

// start begins the run (session file, runner, relay) or the study the
// stepper's mode asks for.
func (m *Model) start() tea.Cmd {
	m.exp = m.controls.experiment(m.exp)
	if m.exp.Seed == 0 {
		m.exp.Seed = m.opt.Now().UnixNano() % 1_000_000
	}
	m.stream++
	if sp := m.controls.studyPlan(m.exp); sp != nil {
		sp.Experiment.Device = m.device.ID
		m.study = newStudyDash(m.st, m.device, *sp)
		m.study.SetSize(m.width, m.height-1)
		m.screen = screenStudy
		return m.study.start(m.ctx, m.opt.Backend, m.stream)
	}
	m.dash = m.newDashboard(modeLive)
	m.dash.starting = true
	m.screen = screenDashboard
	name := fmt.Sprintf("%s-%s.jsonl", m.opt.Now().UTC().Format("20060102-150405"), safeName(m.device.ID))
	pick := true
	if m.opt.SessionFile != "" {
		name, m.opt.SessionFile, pick = m.opt.SessionFile, "", false
	}
	path := filepath.Join(m.opt.SessionDir, name)
	p := runPlan{device: m.device, exp: m.exp, probeS: m.controls.probeS, realtime: m.controls.realtime, pickName: pick, source: m.opt.Source}
	return startRun(m.ctx, m.opt.Backend, p, path, m.stream)
}

// safeName makes a device id usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

func (m *Model) resize() {
	h := m.height - 3 // title, blank... help bar
	switch m.screen {
	case screenDevices:
		m.devices.SetSize(m.width, h)
	case screenBuilds:
		m.builds.SetSize(m.width, h)
	case screenControls:
		m.controls.SetSize(m.width, h-2)
	}
	m.devices.SetSize(m.width, h)
	if m.dash != nil {
		m.dash.SetSize(m.width, m.height-1)
	}
	if m.study != nil {
		m.study.SetSize(m.width, m.height-1)
	}
}

func (m *Model) paneHelp() keyHelp {
	var h keyHelp
	switch m.screen {
	case screenDevices:
		h = m.devices.help()
	case screenBuilds:
		h = m.builds.help()
	case screenControls:
		h = m.controls.help()
	case screenDashboard:
		h = m.dash.help()
	case screenStudy:
		h = m.study.help()
	}
	if (m.screen == screenDashboard && m.dash.typing()) || (m.screen == screenBuilds && m.builds.editing()) ||
		(m.screen == screenStudy && m.study.typing()) {
		return h // keys go to the prompt: ? and q are text there
	}
	h.short = append(h.short, m.keys.Help, m.keys.Quit)
	if m.screen == screenBuilds || m.screen == screenControls || (m.screen == screenDashboard && m.dash.mode == modeCheck) ||
		(m.screen == screenStudy && !m.study.running()) {
		h.short = append(h.short, m.keys.Back)
	}
	h.full = append(h.full, []key.Binding{m.keys.Help, m.keys.Back, m.keys.Quit})
	return h
}

// View draws the screen in front and the help bar.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "perflab"
	return v
}

// Regressed reports whether the last run completed and its final analysis
// found a regression in some metric (perflab run's exit status 3).
func (m *Model) Regressed() bool {
	if m.dash == nil || m.dash.mode != modeLive || !m.dash.finalDone || m.dash.state.end == nil || m.dash.state.end.Reason != "completed" {
		return false
	}
	for _, mp := range m.dash.panel.metrics {
		if mp.verdict == "regression" {
			return true
		}
	}
	return false
}

// Session returns the path of the session file written by the last run.
func (m *Model) Session() string {
	if m.dash != nil && m.dash.run != nil {
		return m.dash.run.sessionPath
	}
	return ""
}

// WaitSaved cancels a run still going (the program was killed) and waits,
// up to timeout, until its session file is closed with its end event.
func (m *Model) WaitSaved(timeout time.Duration) error {
	if m.dash == nil || m.dash.run == nil || m.dash.run.saved == nil {
		return nil
	}
	m.dash.run.cancel()
	select {
	case <-m.dash.run.saved:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("session %s: not closed after %s; it holds every finished trial", m.dash.run.sessionPath, timeout)
	}
}

func (m *Model) render() string {
	w, h := m.width, m.height
	if w < 20 || h < 5 {
		return "perflab needs a larger window"
	}
	hb := m.paneHelp()
	if m.help.ShowAll {
		title := m.st.Title.Render("perflab · keys")
		return block(title+"\n\n"+m.help.View(hb)+"\n\n"+m.st.Muted.Render("? or esc closes this help"), w, h)
	}
	helpLine := truncate(m.help.View(hb), w)
	if m.screen == screenDashboard {
		return m.dash.View() + "\n" + pad(helpLine, w)
	}
	if m.screen == screenStudy {
		return m.study.View() + "\n" + pad(helpLine, w)
	}
	var title, body string
	switch m.screen {
	case screenDevices:
		title = "perflab · 1/3 pick a device"
		body = m.devices.View()
	case screenBuilds:
		title = "perflab · 2/3 pick builds on " + m.device.ID
		body = m.builds.View()
	case screenControls:
		title = "perflab · 3/3 controls on " + m.device.ID
		body = m.controlsHeader() + "\n" + m.controls.View()
	}
	head := m.st.Title.Render(truncate(title, w))
	if m.err != nil {
		head += "\n" + m.st.Error.Render(truncate(m.err.Error(), w))
	} else {
		head += "\n"
	}
	return head + "\n" + block(body, w, h-3) + "\n" + pad(helpLine, w)
}

// controlsHeader names the builds above the stepper.
func (m *Model) controlsHeader() string {
	a, b := m.exp.Builds[lab.ArmControl], m.exp.Builds[lab.ArmTreatment]
	return truncate(fmt.Sprintf("A %s  vs  B %s", label(a), label(b)), m.width) + "\n"
}

// DefaultSessionDir is where the workbench saves sessions unless told.
// It is engine.DefaultDir, or "perflab-sessions" without a home directory.
func DefaultSessionDir() string {
	if d, err := engine.DefaultDir(); err == nil {
		return d
	}
	return "perflab-sessions"
}
