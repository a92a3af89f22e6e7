// Package tui is perflab's workbench: pick a device and two builds, set the
// noise controls, watch trials, confidence intervals and p-values update
// live, and replay saved sessions. It is the only package that imports
// Bubble Tea; the lab, the analysis and the session format know nothing of it.
package tui

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// screen is the step of the workbench on show.
type screen int

const (
	screenDevices screen = iota
	screenBuilds
	screenControls
	screenDashboard // a run
	screenCheck
	screenReplay
	screenStudy
)

// pane is what the root needs of every pane: it draws into the size it is
// given, lists its keys for the help bar, says whether a prompt has the
// keys (then ?, q and esc are text) and whether esc leaves it.
type pane interface {
	View() string
	SetSize(w, h int)
	ShortHelp() []key.Binding
	FullHelp() [][]key.Binding
	Typing() bool
	CanLeave() bool
}

// statusPane is a pane with a status line: the root draws it above the
// help bar (a prompt, a y/N question, the last error or what is going on).
type statusPane interface {
	pane
	StatusLine() string
}

// runningPane is a pane that runs something: q and ctrl+c ask it, since
// quitting may have to abort first.
type runningPane interface {
	pane
	AskQuit() tea.Cmd
	Interrupt() tea.Cmd
}

// viewCloser is a pane with views over its panels (the notes, the where
// view): esc closes the open one before it goes back.
type viewCloser interface {
	closeView() bool
}

// The panes the root focuses: it draws, sizes, asks and quits them
// through these interfaces.
var (
	_ pane        = (*devicesPane)(nil)
	_ pane        = (*buildsPane)(nil)
	_ pane        = (*controlsPane)(nil)
	_ runningPane = (*runDash)(nil)
	_ runningPane = (*checkDash)(nil)
	_ runningPane = (*replayDash)(nil)
	_ runningPane = (*studyDash)(nil)
	_ statusPane  = (*runDash)(nil)
	_ statusPane  = (*checkDash)(nil)
	_ statusPane  = (*replayDash)(nil)
	_ statusPane  = (*studyDash)(nil)
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
	// ChoicesPath is the file of the last run's device, controls and
	// trial count, offered first next time ("" keeps none).
	ChoicesPath string
	// NoColor draws without colour (NO_COLOR).
	NoColor bool
	// Device preselects a device id in the picker (e.g. "sim:pixel");
	// without it the last run's device, else DefaultDevice.
	Device        string
	DefaultDevice string
	// Profiles lists governor profile names offered for a device.
	Profiles func(dev lab.DeviceInfo) []string
	// Instant runs simulated devices in simulated time by default, checks
	// included (tests, quick demos); otherwise they are paced in real time
	// so a run can be watched and steered.
	Instant bool
	// Now stamps session file names (tests fix it).
	Now func() time.Time
	// BackQuits makes esc on a replay quit: the replay was opened from
	// another screen (the history's), which comes back.
	BackQuits bool
}

// Model is the root model: it owns the window size, the global keys, the
// help bar, the title and status line and the pane in front (the focus),
// and routes everything else: keys to the focused pane, domain events to
// the pane that owns them. It reads no pane's fields: panes answer through
// the pane interface, small methods and messages.
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
	dash     *runDash
	check    *checkDash
	replay   *replayDash
	study    *studyDash
	recent   []recentBuild
	last     lastChoices

	device  lab.DeviceInfo
	pool    []string // the devices marked for a pool in the picker (device is the first)
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
	var err error
	if m.last, err = loadChoices(opt.ChoicesPath); err != nil && m.err == nil {
		m.err = err
	}
	return m
}

// New returns the workbench opening on the device picker.
func New(opt Options) *Model {
	m := newModel(opt)
	prefer := opt.Device
	if prefer == "" {
		prefer = cmp.Or(m.last.Device, opt.DefaultDevice)
	}
	m.devices = newDevicesPane(m.st, prefer)
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
	m.stream++
	m.replay = newReplayDash(m.st, dev, plan, m.analyzer(), events, speed, problems, m.stream)
	m.replay.SetSize(m.width, m.height-2)
	m.screen = screenReplay
	return m
}

// SetReplayPath names the session file a replay reads, for the where
// view's profiles beside it.
func (m *Model) SetReplayPath(path string) {
	if m.replay != nil {
		m.replay.where.path, m.replay.where.replay = path, true
	}
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
		p.setRealtime(false)
	}
	if !m.fixedEx {
		p.remember(m.last) // an experiment file's settings stay as written
	}
	if len(exp.Devices) > 1 {
		p.setProbe(0) // the stability check runs on one device: perflab check each of a pool
	}
	return p
}

// analyzer computes a dashboard's panels with the experiment's options.
func (m *Model) analyzer() analyzer { return planAnalyzer(m.exp) }

// planAnalyzer computes the panels of a session of plan with its options
// (engine.Options), as perflab report does.
func planAnalyzer(plan lab.Experiment) analyzer {
	opt := engine.Options(&plan)
	return analyzer{analyze: func(in []analysis.MetricInput, evs []lab.Event) panelData { return analyzeSession(in, evs, &plan, opt) },
		stability: stabilitySummary}
}

// newRunDash opens the dashboard of a run of m.exp on m.device.
func (m *Model) newRunDash() *runDash {
	d := newRunDash(m.st, m.device, m.exp, m.analyzer(), m.profiles(m.device), m.stream)
	d.SetSize(m.width, m.height-2)
	return d
}

// newCheckDash opens the dashboard of a stability check of m.device.
func (m *Model) newCheckDash() *checkDash {
	d := newCheckDash(m.st, m.device, m.analyzer(), m.stream)
	d.SetSize(m.width, m.height-2)
	return d
}

// focused is the pane in front.
func (m *Model) focused() pane {
	switch m.screen {
	case screenBuilds:
		return &m.builds
	case screenControls:
		return &m.controls
	case screenDashboard:
		return m.dash
	case screenCheck:
		return m.check
	case screenReplay:
		return m.replay
	case screenStudy:
		return m.study
	}
	return &m.devices
}

// Init lists devices (or starts a replay) and asks for the background colour.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tea.RequestBackgroundColor}
	switch m.screen {
	case screenDevices:
		cmds = append(cmds, listDevices(m.ctx, m.opt.Backend))
	case screenReplay:
		cmds = append(cmds, m.replay.Init())
	}
	return tea.Batch(cmds...)
}

// Update routes a message: global keys first, then the pane in front;
// domain events go to the pane that owns them.
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
	case savedMsg:
		if msg.err != nil {
			m.err = msg.err
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
	case devicesListedMsg:
		var cmd tea.Cmd
		m.devices, cmd = m.devices.Update(msg)
		return m, cmd
	case streamMsg:
		return m, m.routeStream(msg)
	}
	// Keys and the rest go to the pane in front.
	var cmd tea.Cmd
	switch m.screen {
	case screenDevices:
		m.devices, cmd = m.devices.Update(msg)
	case screenBuilds:
		m.builds, cmd = m.builds.Update(msg)
	case screenControls:
		m.controls, cmd = m.controls.Update(msg)
	case screenDashboard:
		m.dash, cmd = m.dash.Update(msg)
	case screenCheck:
		m.check, cmd = m.check.Update(msg)
	case screenReplay:
		m.replay, cmd = m.replay.Update(msg)
	case screenStudy:
		m.study, cmd = m.study.Update(msg)
	}
	return m, cmd
}

// routeStream hands a stream's message (its start, events, analyses,
// replay ticks) to the dashboard that owns the stream, in front or not:
// a check left with esc still reads its stream until it closes. A
// message of a stream nobody owns any more is dropped.
func (m *Model) routeStream(msg streamMsg) tea.Cmd {
	id := msg.streamID()
	var cmd tea.Cmd
	switch {
	case m.dash != nil && m.dash.Stream() == id:
		m.dash, cmd = m.dash.Update(msg)
	case m.check != nil && m.check.Stream() == id:
		m.check, cmd = m.check.Update(msg)
	case m.replay != nil && m.replay.Stream() == id:
		m.replay, cmd = m.replay.Update(msg)
	case m.study != nil && m.study.Stream() == id:
		m.study, cmd = m.study.Update(msg)
	}
	return cmd
}

// globalKey handles help, quit and back; done means the key was consumed.
func (m *Model) globalKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	p := m.focused()
	if msg.String() == "ctrl+c" {
		if r, ok := p.(runningPane); ok {
			return r.Interrupt(), true
		}
		return tea.Quit, true
	}
	if p.Typing() {
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
		if r, ok := p.(runningPane); ok {
			return r.AskQuit(), true
		}
		return tea.Quit, true
	case key.Matches(msg, m.keys.Back):
		if v, ok := p.(viewCloser); ok && v.closeView() {
			return nil, true
		}
		return m.back(), true
	}
	return nil, false
}

// back returns to the previous step of the picking flow, when the pane in
// front can be left.
func (m *Model) back() tea.Cmd {
	if m.screen == screenReplay && m.opt.BackQuits {
		return tea.Quit
	}
	if !m.focused().CanLeave() {
		return nil
	}
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
		m.screen = screenControls
		m.resize()
	case screenCheck:
		m.check.Leave()
		m.screen = screenDevices
	}
	return nil
}

func (m *Model) chooseDevice(msg deviceChosenMsg) tea.Cmd {
	m.device = msg.device
	m.pool = msg.pool
	if msg.check {
		m.stream++
		m.check = m.newCheckDash()
		m.screen = screenCheck
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
	exp.Device, exp.Devices = m.device.ID, nil
	if len(m.pool) > 1 { // marked in the picker: one experiment over them all
		exp.Device, exp.Devices = "", m.pool
		if exp.Order == lab.OrderFixed {
			exp.Order = lab.OrderRandom // a pool runs whole rounds of one A and one B
		}
	}
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
	var save tea.Cmd
	if !m.fixedEx {
		c := m.exp.Controls
		m.last = lastChoices{Device: m.device.ID, Backend: m.device.Backend, Controls: &c, Trials: m.exp.Trials}
		save = saveJSON(m.opt.ChoicesPath, "the last choices", m.last)
	}
	if m.exp.Seed == 0 {
		m.exp.Seed = m.opt.Now().UnixNano() % 1_000_000
	}
	m.stream++
	if sp := m.controls.studyPlan(m.exp); sp != nil {
		sp.Experiment.Device = m.device.ID
		m.study = newStudyDash(m.st, m.device, *sp)
		m.study.SetSize(m.width, m.height-2)
		m.screen = screenStudy
		return tea.Batch(save, m.study.start(m.ctx, m.opt.Backend, m.stream))
	}
	m.dash = m.newRunDash()
	m.screen = screenDashboard
	name := fmt.Sprintf("%s-%s.jsonl", m.opt.Now().UTC().Format("20060102-150405"), safeName(m.device.ID))
	pick := true
	if m.opt.SessionFile != "" {
		name, m.opt.SessionFile, pick = m.opt.SessionFile, "", false
	}
	path := filepath.Join(m.opt.SessionDir, name)
	probeS, realtime := m.controls.runSettings()
	if len(m.exp.Devices) > 1 {
		probeS = 0 // the stability check runs on one device (perflab check each device of a pool)
	}
	p := runPlan{device: m.device, exp: m.exp, probeS: probeS, realtime: realtime, pickName: pick, source: m.opt.Source}
	return tea.Batch(save, startRun(m.ctx, m.opt.Backend, p, path, m.stream))
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

// Regressed reports whether the last run completed and its final analysis
// found a regression in some metric (perflab run's exit status 3).
func (m *Model) Regressed() bool { return m.dash != nil && m.dash.Regressed() }

// Session returns the path of the session file written by the last run.
func (m *Model) Session() string {
	if m.dash == nil {
		return ""
	}
	return m.dash.SessionPath()
}

// WaitSaved cancels a run still going (the program was killed) and waits,
// up to timeout, until its session file is closed with its end event.
func (m *Model) WaitSaved(timeout time.Duration) error {
	if m.dash == nil {
		return nil
	}
	return m.dash.WaitSaved(timeout)
}

// DefaultSessionDir is where the workbench saves sessions unless told.
// It is engine.DefaultDir, or "perflab-sessions" without a home directory.
func DefaultSessionDir() string {
	if d, err := engine.DefaultDir(); err == nil {
		return d
	}
	return "perflab-sessions"
}
