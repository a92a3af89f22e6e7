package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/sim"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/study"
	"github.com/perflab/perflab/tui"
)

// tuiFlags are the options every workbench entry point shares.
type tuiFlags struct {
	device   string
	sessions string
	out      string
	realtime bool
	access   deviceAccess // --adb and --ssh; the caller opens and closes them
	force    bool
	seed     int64
}

func (f *tuiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.device, "device", "", "device to preselect (sim:<preset>, local, adb:<serial>)")
	fs.StringVar(&f.sessions, "sessions", tui.DefaultSessionDir(), "directory for new session files")
	fs.BoolVar(&f.realtime, "realtime", false, "pace simulated devices at wall-clock speed")
	f.access.register(fs)
	fs.Int64Var(&f.seed, "seed", 1, "seed for simulated devices")
}

const tuiUsage = `Usage: perflab [--device ID] [--sessions DIR] [--realtime] [--adb HOST:PORT]

Opens the workbench: pick a device (the simulated phones are always there),
pick the control (A) and treatment (B) builds, walk through the noise
controls, then watch trials, confidence intervals and p-values update live.
Every run is saved as a session file you can replay or report on later.

Keys: arrows or j/k move, enter chooses, esc goes back, ? shows every key,
q quits (a running experiment asks before it is aborted).

Examples:
  perflab                               # start on the simulated phone
  perflab --device local                # preselect this Linux host
  perflab --adb 127.0.0.1:5037          # list phones of that adb server
  perflab run example:sim-controls-on   # the workbench on an experiment
  perflab replay SESSION.jsonl          # replay a saved session

Manual: docs/workbench.md

Flags:
`

// cmdTUI opens the workbench on the device picker.
func cmdTUI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("perflab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f tuiFlags
	f.register(fs)
	fs.Usage = func() { fmt.Fprint(stderr, tuiUsage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "perflab: unexpected argument %q (see perflab --help)\n", pos[0])
		return 2
	}
	if !f.access.openOr(ctx, "perflab", stderr) {
		return exitError
	}
	defer f.access.close()
	m := tui.New(tuiOptions(ctx, f))
	return workbenchExit("perflab", m, runProgram(ctx, m, stdout, stderr), stderr)
}

// defaultSimDevice is the simulated phone the picker starts on.
func defaultSimDevice() string {
	return "sim:pixel"
}

// openRunTUI opens the workbench on an experiment file (perflab run without
// --headless): the device and builds come from the file, the user reviews
// the controls and starts.
func openRunTUI(ctx context.Context, cmd, expPath string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("perflab run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f tuiFlags
	f.register(fs)
	fs.StringVar(&f.out, "out", "", "session file to write")
	fs.BoolVar(&f.force, "force", false, "")
	fs.Bool("headless", false, "")
	fs.Float64("speed", 0, "")
	// The run command has validated its own flags; only ours matter here.
	var known []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
		if !strings.HasPrefix(a, "-") || fs.Lookup(name) == nil {
			continue
		}
		known = append(known, a)
		if !strings.Contains(a, "=") {
			if _, isBool := fs.Lookup(name).Value.(interface{ IsBoolFlag() bool }); !isBool && i+1 < len(args) {
				i++
				known = append(known, args[i])
			}
		}
	}
	if _, err := parseInterleaved(fs, known); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 2
	}
	exp, err := lab.LoadExperiment(expPath)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 1
	}
	if f.device != "" {
		exp.SetDevices([]string{f.device})
	}
	if !f.access.openOr(ctx, cmd, stderr) {
		return exitError
	}
	defer f.access.close()
	opt := tuiOptions(ctx, f)
	if len(exp.Devices) > 0 {
		// A pool: its selectors become devices now, so the workbench shows
		// one lane per device from the start.
		ids, err := opt.Backend.Lab.Resolve(ctx, exp.Devices)
		if err == nil && len(ids) == 0 {
			err = fmt.Errorf("no device matches %s", strings.Join(exp.Devices, ", "))
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %s: %v\n", cmd, expPath, err)
			return 1
		}
		exp.SetDevices(ids)
	}
	if len(exp.Devices) > 0 {
		exp.Device = exp.Devices[0] // the workbench's device; the run opens them all
	}
	devs, _ := opt.Backend.ListDevices(ctx)
	info := lab.DeviceInfo{ID: exp.Device}
	found := false
	for _, d := range devs {
		if d.ID == exp.Device {
			info, found = d, true
		}
	}
	if !found {
		d, err := opt.Backend.Lab.Open(ctx, exp.Device, false)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %s: device %s: %v\n", cmd, expPath, exp.Device, err)
			return 1
		}
		info = d.Info()
		d.Close()
	}
	if f.out != "" {
		opt.SessionDir = filepath.Dir(f.out)
		opt.SessionFile = filepath.Base(f.out)
	}
	opt.Source = expPath
	m := tui.NewRun(opt, info, *exp)
	return workbenchExit(cmd, m, runProgram(ctx, m, stdout, stderr), stderr)
}

// workbenchExit is the exit status after the workbench (code: the
// program's), as run --headless gives it for the last run: 3 when it
// completed with a regression, 1 when it was cancelled or failed, else 0.
// The verdict is report's, read from the file on disk, so quitting before
// the dashboard's final analysis came in cannot change the exit status.
func workbenchExit(cmd string, m *tui.Model, code int, stderr io.Writer) int {
	if code != exitOK {
		return code
	}
	if path := m.Session(); path != "" {
		if code, err := sessionExit(path); err == nil {
			if code == exitError {
				fmt.Fprintln(stderr, "perflab: the run did not complete; the session keeps every finished trial")
			}
			return regressionFound(stderr, cmd, code)
		}
	}
	if m.Regressed() {
		return regressionFound(stderr, cmd, exitRegression)
	}
	return code
}

// sessionExit is a saved session's exit status as run --headless gives
// it: exitError when the run did not complete, else the verdict of an
// analysis as perflab report makes it (its plan's options, the regime
// report would choose).
func sessionExit(path string) (int, error) {
	s, err := sessions.Load(path)
	if err != nil {
		return exitError, err
	}
	if end := s.Summary().End; end == nil || end.Reason != "completed" {
		return exitError, nil
	}
	opt := engine.Options(&s.Header.Plan)
	events, _, err := regimeEvents(s.Events, "", opt, false)
	if err != nil {
		return exitError, err
	}
	plan := &s.Header.Plan
	return verdictCode(engine.Analyse(plan, sessions.ArmInputs(events, len(plan.ArmKeys())), opt)), nil
}

// openReplayTUI opens a saved session in the workbench (perflab replay
// without --headless). Nothing in the session is run.
func openReplayTUI(ctx context.Context, sessionPath string, speed float64, stdout, stderr io.Writer) int {
	s, err := sessions.Load(sessionPath)
	if err != nil {
		fmt.Fprintf(stderr, "perflab replay: %v\n", err)
		return 1
	}
	var problems []string
	for _, p := range s.Problems {
		problems = append(problems, p.String())
	}
	opt := tuiOptions(ctx, tuiFlags{sessions: tui.DefaultSessionDir()})
	m := tui.NewReplay(opt, s.Header.Device, s.Header.Plan, s.Events, speed, problems)
	m.SetReplayPath(sessionPath)
	return runProgram(ctx, m, stdout, stderr)
}

// tuiOptions wires the workbench to the real lab.
func tuiOptions(ctx context.Context, f tuiFlags) tui.Options {
	devOpt := f.access.options()
	devOpt.Realtime, devOpt.Seed = f.realtime, f.seed
	recent, choices := "", ""
	if dir, err := os.UserConfigDir(); err == nil {
		recent = filepath.Join(dir, "perflab", "recent-builds.json")
		choices = filepath.Join(dir, "perflab", "last-choices.json")
	}
	return tui.Options{
		Ctx:           ctx,
		SessionDir:    f.sessions,
		RecentPath:    recent,
		ChoicesPath:   choices,
		NoColor:       os.Getenv("NO_COLOR") != "",
		Device:        f.device,
		DefaultDevice: defaultSimDevice(),
		Backend:       tuiBackend(devOpt, f.force),
		Profiles:      governorProfiles,
	}
}

// tuiBackend connects the workbench to lab/devices and the session engine;
// force lets a run replace an existing session file (run --out --force).
func tuiBackend(devOpt devices.Options, force bool) tui.Backend {
	l := deviceLab(devOpt)
	if force {
		l.Create = func(path string, h sessions.Header, _ bool) (engine.Writer, error) {
			return sessions.CreateOverwrite(path, h)
		}
	}
	return tui.Backend{
		ListDevices: func(ctx context.Context) ([]lab.DeviceInfo, error) { return devices.List(ctx, devOpt) },
		Lab:         l,
		Tool:        "perflab " + version,
		Builds:      readyBuilds,
		StartStudy:  func(ctx context.Context, p tui.StudyPlan) <-chan study.Update { return startStudy(ctx, devOpt, p) },
	}
}

// startStudy runs a workbench study as perflab validate or perflab order
// would, with their device construction and defaults.
func startStudy(ctx context.Context, devOpt devices.Options, p tui.StudyPlan) <-chan study.Update {
	devs := studyDevices(p.Experiment.Device, devOpt, 0)
	if p.Study == tui.StudyOrder {
		return study.OrderStream(ctx, study.OrderConfig{Experiment: p.Experiment, Devices: devs, Runs: p.Runs})
	}
	// The stepper always sets the effect (off is 0: none).
	return study.ValidateStream(ctx, study.NewValidateConfig(p.Experiment, devs, p.AA, p.EffectPct, true))
}

// readyBuilds offers the builds a device can run without typing anything:
// on the simulated phone each app with known effects, so detection can be
// checked against the truth.
func readyBuilds(dev lab.DeviceInfo) []tui.BuildChoice {
	var out []tui.BuildChoice
	if dev.Has(lab.CapSimTime) {
		for _, app := range sim.Apps() {
			for _, eff := range []float64{0, 1, 5, -3} {
				name := app.Name
				detail := app.Description
				if eff != 0 {
					name = fmt.Sprintf("%s%+g%%", app.Name, eff)
					detail = fmt.Sprintf("%s with a true effect of %+g%%", app.Name, eff)
				}
				out = append(out, tui.BuildChoice{Label: name, Detail: detail,
					Build: lab.Build{Name: name, App: app.Name, EffectPct: eff}})
			}
			if app.Name == "feed" {
				// A change in one function, for the where view: profiles
				// go on with it (the controls' "profiles" row).
				const fn, pct = "feed.decodeImage", 10
				name := fmt.Sprintf("feed, decodeImage %+d%%", pct)
				out = append(out, tui.BuildChoice{Label: name,
					Detail: fmt.Sprintf("feed with %s %d%% slower (about +2%% of the launch): w on the dashboard shows where", fn, pct),
					Build:  lab.Build{Name: name, App: app.Name, Effect: &lab.FunctionEffect{Function: fn, Pct: pct}}})
			}
		}
	}
	if dev.Has(lab.CapCommandBuilds) {
		out = append(out,
			tui.BuildChoice{Label: "sleep 10ms", Detail: "sh -c 'sleep 0.01': a baseline", Build: lab.Build{Name: "sleep 10ms", Command: []string{"sh", "-c", "sleep 0.01"}}},
			tui.BuildChoice{Label: "sleep 12ms", Detail: "sh -c 'sleep 0.012': 2 ms slower", Build: lab.Build{Name: "sleep 12ms", Command: []string{"sh", "-c", "sleep 0.012"}}},
		)
	}
	return out
}

// governorProfiles names the governor profiles offered for a device: the
// sim presets' built-in ones, elsewhere the profile perflab tune saved.
func governorProfiles(dev lab.DeviceInfo) []string {
	if dev.Has(lab.CapSimTime) {
		return []string{"recommended", "max"}
	}
	if _, _, err := governor.LoadTuned(dev.Model); err == nil {
		return []string{"tuned"}
	}
	return nil
}

// runProgram runs the workbench and reports where the session went.
func runProgram(ctx context.Context, m *tui.Model, stdout, stderr io.Writer) int {
	st, err := openScreen(stdout, stderr, false)
	if err != nil {
		fmt.Fprintln(stderr, "perflab: the workbench needs a terminal and the output is not one;")
		fmt.Fprintln(stderr, "  use a command instead: perflab run EXP.json --headless, perflab replay SESSION.jsonl --headless, perflab help")
		return exitUsage
	}
	defer st.close()
	screen := st.screen
	screen.NoColor = os.Getenv("NO_COLOR") != ""
	err = tui.Run(ctx, m, screen)
	// A run still going (the program was interrupted) ends with its end
	// event written before perflab exits.
	if werr := m.WaitSaved(10 * time.Second); werr != nil {
		fmt.Fprintf(stderr, "perflab: %v\n", werr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "perflab: %v\n", err)
		return 1
	}
	if s := m.Session(); s != "" {
		saved := stdout
		if st.elsewhere() {
			// The screen was on the terminal, stdout redirected: it keeps
			// the session's table, as perflab report prints it; where the
			// session is goes to the terminal.
			cmdReport(ctx, []string{s}, stdout, io.Discard)
			saved = stderr
		}
		fmt.Fprintf(saved, "session saved: %s\n", s)
		fmt.Fprintf(saved, "  perflab report %s\n  perflab replay %s\n", s, s)
	}
	return 0
}
