package tui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/study"
)

// controlRow is one row of the stepper: a control or a run setting.
type controlRow struct {
	def     controlDef
	setting string // "order", "trials", "warmup", "probe", "profile", "pace", "mode", "aa", "effect", "runs"; "" for a control
}

// controlsPane is the controls stepper: it walks through every control with
// a line on what it does, greys out what the device cannot do, and ends with
// the order mode, trial count, warm-up and the stability check.
type controlsPane struct {
	st       *Styles
	device   lab.DeviceInfo
	controls lab.Controls
	order    string
	trials   int
	benches  int // a suite's benchmarks (a round is one benchmark); 0 otherwise
	warmup   int
	probeS   float64
	profile  bool // a CPU profile of every trial (perflab profile, the where view)
	realtime bool // sim only: wall-clock pacing
	// mode is what enter starts: "run" (one experiment), StudyValidate or
	// StudyOrder; aa, effectPct and runs are the studies' settings.
	mode      string
	aa        int
	effectPct float64
	runs      int
	profiles  []string // governor profile names offered for this device
	rows      []controlRow
	// absent names the device's controls it cannot apply: one line under
	// the rows rather than a row each (on local, 7 of the 11).
	absent []string
	cursor int
	live   bool // editing controls of a running run: no run settings
	keys   controlsKeys
	width  int
	height int
}

type controlsKeys struct {
	list   listKeys
	Toggle key.Binding
	Left   key.Binding
	Start  key.Binding
	All    key.Binding
	None   key.Binding
}

func newControlsKeys(live bool) controlsKeys {
	k := controlsKeys{
		list:   newListKeys(),
		Toggle: key.NewBinding(key.WithKeys("space", "right", "l"), key.WithHelp("space/→", "change")),
		Left:   key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←", "back a value")),
		Start:  key.NewBinding(key.WithKeys("enter", "s"), key.WithHelp("enter", "start")),
		All:    key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "all on")),
		None:   key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "all off")),
	}
	if live {
		k.Start.SetHelp("enter", "apply from next round")
	}
	k.list.Down.SetKeys("down", "j", "tab")
	return k
}

func newControlsPane(st *Styles, dev lab.DeviceInfo, exp lab.Experiment, profiles []string, live bool) controlsPane {
	p := controlsPane{
		st: st, device: dev, controls: exp.Controls, order: exp.Order,
		trials: exp.Trials, warmup: exp.Warmup, profile: exp.Profile, profiles: profiles, live: live,
		keys: newControlsKeys(live),
	}
	if p.order == "" {
		p.order = "random"
	}
	for _, b := range exp.Builds {
		if b.Effect != nil {
			// A build whose change is in one function: where it went is
			// the question, which needs profiles.
			p.profile = true
		}
	}
	if b := exp.Builds[lab.ArmControl].Bench; exp.Suite != nil && b != nil {
		p.benches = b.Count()
	}
	if p.trials <= 0 {
		// A fresh experiment (no file): the file's defaults, so the
		// workbench and perflab run agree.
		p.trials, p.warmup = lab.DefaultTrials, lab.DefaultWarmup
	}
	if dev.Has(lab.CapProbe) && !live {
		p.probeS = 30
	}
	if exp.Suite != nil && !dev.Has(lab.CapGovernor) {
		// A suite on a host whose governor perflab cannot set: nothing
		// would act on the check's answer, and a suite's paired rounds
		// already keep a drifting clock out of the comparison.
		p.probeS = 0
	}
	p.realtime = dev.Has(lab.CapSimTime)
	p.mode, p.runs, p.aa = modeRun, study.DefaultOrderRuns, studyAAReal
	if dev.Has(lab.CapSimTime) {
		// The simulated phone is cheap and knows the truth: many
		// experiments, and a known 1% effect injected.
		p.aa, p.effectPct = studyAASim, 1
	}
	for _, d := range controlDefs {
		if d.needs != "" && !dev.Has(d.needs) {
			continue
		}
		if d.key == "governor" {
			d.values = append([]string{"off"}, profiles...)
			if len(profiles) == 0 {
				d.values = []string{"off"}
			}
		}
		p.rows = append(p.rows, controlRow{def: d})
	}
	var kept []controlRow
	for _, r := range p.rows {
		if p.supported(r) {
			kept = append(kept, r)
		} else {
			p.absent = append(p.absent, p.label(r))
		}
	}
	p.rows = kept
	if !live {
		p.rows = append(p.rows,
			controlRow{setting: "order"}, controlRow{setting: "trials"},
			controlRow{setting: "warmup"}, controlRow{setting: "probe"}, controlRow{setting: "profile"})
		if dev.Has(lab.CapSimTime) {
			p.rows = append(p.rows, controlRow{setting: "pace"})
		}
		// The studies (validate, order) take a control and a treatment:
		// an experiment of more builds is only run.
		if !exp.MultiArm() {
			p.rows = append(p.rows, controlRow{setting: "mode"}, controlRow{setting: "aa"},
				controlRow{setting: "effect"}, controlRow{setting: "runs"})
		}
	}
	return p
}

// supported reports whether the device can apply the row's control.
func (p controlsPane) supported(r controlRow) bool {
	switch r.setting {
	case "probe":
		return p.mode == modeRun && p.device.Has(lab.CapProbe)
	case "pace", "profile":
		return p.mode == modeRun
	case "aa", "effect":
		return p.mode == StudyValidate
	case "runs":
		return p.mode == StudyOrder
	case "":
	default:
		return true
	}
	if r.def.cap == "" {
		return true
	}
	if r.def.key == "governor" && len(r.def.values) < 2 {
		return false
	}
	return p.device.Has(r.def.cap)
}

func (p controlsPane) value(r controlRow) string {
	switch r.setting {
	case "order":
		return p.order
	case "trials":
		if p.benches > 1 {
			// perflab suite --trials N: N rounds of each benchmark.
			about := ""
			if p.trials%p.benches != 0 {
				about = "about "
			}
			return fmt.Sprintf("%d per arm: %s%d rounds of %d benchmarks", p.trials, about, p.trials/p.benches, p.benches)
		}
		return fmt.Sprintf("%d per arm", p.trials)
	case "warmup":
		if p.warmup == 1 {
			return "1 round"
		}
		return fmt.Sprintf("%d rounds", p.warmup)
	case "probe":
		if p.probeS <= 0 {
			return "off"
		}
		return fmt.Sprintf("%gs", p.probeS)
	case "pace":
		if p.realtime {
			return "real time"
		}
		return "instant"
	case "profile":
		if p.profile {
			return "on"
		}
		return "off"
	case "mode":
		return p.mode
	case "aa":
		return fmt.Sprintf("%d", p.aa)
	case "effect":
		if p.effectPct == 0 {
			return "off"
		}
		return fmt.Sprintf("%+g%%", p.effectPct)
	case "runs":
		return fmt.Sprintf("%d", p.runs)
	}
	return r.def.get(p.controls)
}

func (p controlsPane) explain(r controlRow) string {
	switch r.setting {
	case "order":
		return "fixed: all A then all B · alternate: ABAB · random: each round shuffled (seeded)"
	case "trials":
		return "counted trials per arm; failed trials and warm-ups do not count"
	case "warmup":
		return "warm-up rounds: recorded, not analysed"
	case "probe":
		return "MFLOPS stability check before the first trial, charted live"
	case "profile":
		return "a labelled CPU profile of every trial: where the time went, per function with its CI (w on the dashboard; perflab profile SESSION)"
	case "pace":
		return "real time: watch and steer the run · instant: simulated time, done in seconds"
	case "mode":
		return "run: one A/B experiment · validate: K A/A experiments (and a known effect) measure the false-positive rate and power · order: N fixed- against random-order runs test order dependence"
	case "aa":
		return "K A/A experiments (control against itself): the false-positive rate and its binomial CI against α"
	case "effect":
		if p.device.Has(lab.CapSimTime) {
			return "K more experiments whose treatment is the control made X% costlier (injected: the simulated phone knows the truth); the detection rate"
		}
		return "K more experiments of A against B, which you declare differ by X%; the detection rate (off: none)"
	case "runs":
		return "N repetitions of a fixed-order and a random-order run, compared by Kruskal–Wallis (OrderSage)"
	}
	return r.def.explain
}

// whyNot says why a row is greyed out.
func (p controlsPane) whyNot(r controlRow) string {
	switch {
	case r.setting == "probe" && p.mode != modeRun, r.setting == "pace":
		return "a study runs no stability check and, on sim, runs in simulated time with a fresh phone per run"
	case r.setting == "profile":
		return "a study collects no profiles"
	case r.setting == "aa" || r.setting == "effect":
		return "only for mode validate"
	case r.setting == "runs":
		return "only for mode order"
	case r.setting == "probe":
		return p.device.ID + " cannot run the MFLOPS probe"
	case r.def.key == "governor" && p.device.Has(lab.CapGovernor):
		return "no governor profile known for " + p.device.ID + ": run perflab tune " + p.device.ID + " first"
	}
	why := fmt.Sprintf("%s lacks the %s capability", p.device.ID, r.def.cap)
	for _, n := range p.device.Notes {
		if strings.Contains(n, r.def.cap) || (r.def.key == "governor" && strings.Contains(n, "cpufreq")) {
			why += " (" + n + ")"
		}
	}
	return why
}

func (p controlsPane) label(r controlRow) string {
	switch r.setting {
	case "order":
		return "order"
	case "trials":
		return "trials"
	case "warmup":
		return "warm-up"
	case "probe":
		return "stability check"
	case "profile":
		return "profiles"
	case "pace":
		return "sim pace"
	case "mode":
		return "mode"
	case "aa":
		return "A/A experiments"
	case "effect":
		return "known effect"
	case "runs":
		return "order runs"
	}
	return r.def.label
}

// step changes the row under the cursor by dir (+1 or -1).
func (p *controlsPane) step(dir int) {
	if p.cursor < 0 || p.cursor >= len(p.rows) {
		return
	}
	r := p.rows[p.cursor]
	if !p.supported(r) {
		return
	}
	switch r.setting {
	case "order":
		p.order = cycle([]string{"fixed", "alternate", "random"}, p.order, dir)
	case "trials":
		p.trials = stepInt(p.trials, dir, 2, 10000)
	case "warmup":
		p.warmup += dir
		if p.warmup < 0 {
			p.warmup = 0
		}
	case "pace":
		p.realtime = !p.realtime
	case "profile":
		p.profile = !p.profile
	case "mode":
		p.mode = cycle([]string{modeRun, StudyValidate, StudyOrder}, p.mode, dir)
		p.keys.Start.SetHelp("enter", "start "+p.mode)
	case "aa":
		p.aa = stepInt(p.aa, dir, 2, 10000)
	case "runs":
		p.runs = stepInt(p.runs, dir, 2, 10000)
	case "effect":
		steps := []string{"0", "0.5", "1", "2", "5", "10", "-1"}
		p.effectPct, _ = strconv.ParseFloat(cycle(steps, strconv.FormatFloat(p.effectPct, 'f', -1, 64), dir), 64)
	case "probe":
		steps := []string{"0", "10", "30", "60", "120"}
		p.probeS, _ = strconv.ParseFloat(cycle(steps, strconv.FormatFloat(p.probeS, 'f', -1, 64), dir), 64)
	case "":
		setControl(&p.controls, r.def.key, cycle(r.def.values, r.def.get(p.controls), dir))
	}
}

// stepInt moves n up or down a 1-2-5 ladder.
func stepInt(n, dir, lo, hi int) int {
	ladder := []int{2, 3, 5, 10, 15, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000}
	if dir > 0 {
		for _, v := range ladder {
			if v > n {
				return min(v, hi)
			}
		}
		return hi
	}
	for i := len(ladder) - 1; i >= 0; i-- {
		if ladder[i] < n {
			return max(ladder[i], lo)
		}
	}
	return lo
}

// cycle returns the value dir steps from cur in vals, wrapping around.
func cycle(vals []string, cur string, dir int) string {
	if len(vals) == 0 {
		return cur
	}
	i := 0
	for j, v := range vals {
		if v == cur {
			i = j
			break
		}
	}
	return vals[((i+dir)%len(vals)+len(vals))%len(vals)]
}

// setAll switches every supported on/off control on or off.
func (p *controlsPane) setAll(on bool) {
	for _, r := range p.rows {
		if r.setting != "" || !p.supported(r) {
			continue
		}
		v := "off"
		if on {
			switch {
			case r.def.key == "proxy":
				v = "replay"
			case r.def.key == "governor":
				v = r.def.values[1]
			case r.def.key == "pin_cpu", r.def.key == "cachegrind":
				continue
			default:
				v = "on"
			}
		}
		setControl(&p.controls, r.def.key, v)
	}
}

// modeRun is the stepper's mode for a single run.
const modeRun = "run"

// Default numbers of A/A experiments, as perflab validate has them: many
// cheap ones on the simulated phone, a handful on real hardware.
const (
	studyAASim  = study.DefaultAASim
	studyAAReal = 20
)

// studyPlan returns the study the stepper describes, or nil for a run.
func (p controlsPane) studyPlan(exp lab.Experiment) *StudyPlan {
	if p.mode == modeRun {
		return nil
	}
	e := p.experiment(exp)
	sp := &StudyPlan{Study: p.mode, Experiment: &e}
	if p.mode == StudyValidate {
		sp.AA, sp.EffectPct = p.aa, p.effectPct
	} else {
		sp.Runs = p.runs
	}
	return sp
}

// controlsDoneMsg is produced when the user starts (or applies) the controls.
type controlsDoneMsg struct{}

func (p controlsPane) Update(msg tea.Msg) (controlsPane, tea.Cmd) {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return p, nil
	}
	switch {
	case moveCursor(km, p.keys.list, &p.cursor, len(p.rows)):
	case key.Matches(km, p.keys.Toggle):
		p.step(1)
	case key.Matches(km, p.keys.Left):
		p.step(-1)
	case key.Matches(km, p.keys.All):
		p.setAll(true)
	case key.Matches(km, p.keys.None):
		p.setAll(false)
	case key.Matches(km, p.keys.Start):
		return p, func() tea.Msg { return controlsDoneMsg{} }
	}
	return p, nil
}

// experiment applies the stepper's choices to exp.
func (p controlsPane) experiment(exp lab.Experiment) lab.Experiment {
	exp.Controls = p.controls
	exp.Order = p.order
	exp.Trials = p.trials
	exp.Warmup = p.warmup
	if !p.live {
		exp.Profile = p.profile
	}
	return exp
}

// runSettings are the stepper's settings of a run that are not part of the
// experiment: the stability check's length and the sim's pacing.
func (p controlsPane) runSettings() (probeS float64, realtime bool) { return p.probeS, p.realtime }

// setRealtime paces a simulated device in real time (or not).
func (p *controlsPane) setRealtime(on bool) { p.realtime = on }

// setProbe sets the stability check's length in seconds (0: off).
func (p *controlsPane) setProbe(s float64) { p.probeS = s }

// ShortHelp lists the stepper keys.
func (k controlsKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.list.Up, k.list.Down, k.Toggle, k.Start}
}

// FullHelp groups the stepper keys.
func (k controlsKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.list.Up, k.list.Down}, {k.Toggle, k.Left, k.All, k.None}, {k.Start}}
}

// ShortHelp lists the stepper keys.
func (p controlsPane) ShortHelp() []key.Binding { return p.keys.ShortHelp() }

// FullHelp groups the stepper keys.
func (p controlsPane) FullHelp() [][]key.Binding { return p.keys.FullHelp() }

// Typing: the stepper has no prompt.
func (p controlsPane) Typing() bool { return false }

// CanLeave: esc goes back to the builds.
func (p controlsPane) CanLeave() bool { return true }

func (p *controlsPane) SetSize(w, h int) { p.width, p.height = w, h }

// unsupported says why row r cannot be set here, in a few words.
func (p controlsPane) unsupported(r controlRow) string {
	switch {
	case r.setting == "aa" || r.setting == "effect":
		return "only with mode validate"
	case r.setting == "runs":
		return "only with mode order"
	case (r.setting == "probe" || r.setting == "pace") && p.mode != modeRun:
		return "not for a study"
	}
	return "not supported on " + p.device.ID
}

func (p controlsPane) View() string {
	st := p.st
	var b strings.Builder
	// The focused row's explanation, in full, takes the last lines.
	var about []string
	if p.cursor >= 0 && p.cursor < len(p.rows) && p.height >= 8 {
		r := p.rows[p.cursor]
		text := p.label(r) + ": " + p.explain(r)
		if !p.supported(r) {
			text = p.label(r) + ": " + p.whyNot(r)
		}
		about = wrapWords(text, p.width-2, 2)
	}
	// Keep the cursor visible when the rows do not fit.
	avail := p.height - 2 - len(about)
	if len(p.absent) > 0 {
		avail--
	}
	if len(about) > 0 {
		avail--
	}
	first, avail := visibleRange(p.cursor, avail)
	var cells [][]string
	var dim, on []bool
	for i := first; i < len(p.rows) && i < first+avail; i++ {
		r := p.rows[i]
		val := p.value(r)
		expl := p.explain(r)
		if !p.supported(r) {
			expl = p.unsupported(r)
		}
		cells = append(cells, []string{p.label(r), "[" + val + "]", expl})
		dim = append(dim, !p.supported(r))
		on = append(on, val != "off" && r.setting == "")
	}
	if len(cells) > 0 {
		cur := p.cursor - first
		b.WriteString(pickerTable(st, cells, cur, p.width, func(row, col int) (lipgloss.Style, bool) {
			switch {
			case dim[row]:
				return st.Disabled, true
			case col == 2:
				return st.Muted, true // the explanation
			case row != cur && on[row]:
				return st.OK, true
			}
			return lipgloss.Style{}, false
		}) + "\n")
	}
	if len(p.rows) > avail {
		b.WriteString(st.Muted.Render(fmt.Sprintf("  %d/%d", p.cursor+1, len(p.rows))) + "\n")
	}
	if len(p.absent) > 0 {
		b.WriteString(st.Disabled.Render(truncate("  not on "+p.device.ID+": "+strings.Join(p.absent, ", "), p.width)) + "\n")
	}
	if len(about) > 0 {
		b.WriteString("\n")
		for _, l := range about {
			b.WriteString("  " + st.Muted.Render(l) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
