package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/perflab/perflab/sessions/page"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/check"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

const runUsage = `Usage: perflab run EXPERIMENT.json [--headless] [flags]
       perflab run --headless [-n NAME -n NAME ...] [flags] -- 'COMMAND A' 'COMMAND B' ['COMMAND C' ...]

Runs the builds of an experiment file (control and treatment, or a list of
builds, the base first) in rounds of one trial per build, in the chosen
order, with the reset procedure around each trial, records every event to a
session file (each trial written as it ends, synced to disk within 20 ms)
and compares each build with the base. With three or more builds the table
has benchstat's layout: a column per build, Δ against the base, a geomean
row, p-values corrected across builds × metrics.

The second form needs no file, as hyperfine: two or more shell commands
(each run as sh -c COMMAND on this host, from the current directory), the
first the control (the base), named by their text or by -n. --trials, --warmup, --order,
--threshold, --stop and --max-trials override a file's values (and the
defaults: 20 trials per arm, 1 warm-up round, random order, threshold 0,
stop fixed). --stop auto ends the run as soon as the verdict of the
primary metric (the file's "primary", else its first metric, else the
first one measured) is decided by the sequential paired analysis (a
group-sequential design calibrated to --max-trials: valid for looks up to
the cap; or at the cap); the end says why, and the report gives that
metric the same verdict. The primary is tested at the full alpha, the
other metrics are corrected among themselves (Holm).

Without --headless the workbench opens on the experiment. With --headless
progress and an ETA go to stderr and the comparison table to stdout;
--probe 30s first runs the MFLOPS stability check, as the workbench can.
Exit status: 0 no regression found, 3 regression detected, 1 error or
cancelled (the session keeps every finished trial).

Several --device (or "devices" in the file, or a selector such as
adb:model=MODEL for every online phone of that model on the --adb
servers) make a pool: each device runs whole rounds side by side, every
trial records its device, and the report adds each device's result, a
stratified test and a warning when one device disagrees.

The session goes to --out, or to $XDG_DATA_HOME/perflab/sessions/ID.jsonl
(~/.local/share/perflab/sessions) when --out is not given.

Examples:
  perflab run --headless -- 'gzip -1 -c big.txt' 'gzip -9 -c big.txt'
  perflab run --headless -n old -n new --trials 30 --export-markdown ab.md -- ./old ./new
  perflab run --headless -n gz1 -n gz6 -n gz9 -- 'gzip -1 -c f' 'gzip -6 -c f' 'gzip -9 -c f'
  perflab run example:local-aa --headless --trials 10 --order alternate
  perflab run example:local-regression --headless --out /tmp/s.jsonl
  perflab run exp.json --headless --device sim:pixel --json > report.json
  perflab run exp.json --headless --device sim:pixel --device sim:pixel#2 --device sim:pixel#3
  perflab run exp.json --headless --device 'adb:model=Pixel 3' --adb 127.0.0.1:5037 --adb labhost:5037
  perflab run example:sim-controls-on --headless --probe 30s
  perflab report /tmp/s.jsonl

Manual: docs/sessions.md, docs/experiment-file.md (the experiment file)

Flags:
`

// cmdRun runs an experiment file.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	headless := fs.Bool("headless", false, "run without the workbench: progress on stderr, table on stdout")
	out := fs.String("out", "", "session file to write (default: the user's data dir)")
	force := fs.Bool("force", false, "overwrite the --out file if it exists")
	var device repeatedFlag
	fs.Var(&device, "device", "device to run on, overriding the file's \"device\" or \"devices\" (local, sim:PRESET, adb:SERIAL, or a pool selector adb:model=MODEL); repeatable: a pool of devices that run rounds side by side")
	var acc deviceAccess
	acc.register(fs)
	realtime := fs.Bool("realtime", false, "pace a simulated device at wall-clock speed")
	asJSON := fs.Bool("json", false, "print the final report as JSON (compare --json schema plus \"session\")")
	quiet := fs.Bool("quiet", false, "no progress output")
	probe := fs.Duration("probe", 0, "run the MFLOPS stability check for `DURATION` (device time) after the controls are applied and before the first trial, recorded in the session as the workbench does (e.g. 30s)")
	var names repeatedFlag
	fs.Var(&names, "n", "`NAME` of the next command (repeatable, in order; default: the command's text)")
	var ov runOverrides
	ov.register(fs)
	var ex runExports
	ex.register(fs)
	pos, code, ok := parseCommandFlags(fs, args, runUsage, stdout, stderr)
	if !ok {
		return code
	}
	commands := len(pos) != 1
	switch {
	case len(pos) == 0:
		fmt.Fprintln(stderr, "perflab run: want an experiment file, or -- 'COMMAND A' 'COMMAND B' ... (perflab run --help)")
		return exitUsage
	case commands && (len(pos) < 2 || len(pos) > lab.MaxArms):
		fmt.Fprintf(stderr, "perflab run: want 2 to %d commands (the base first), got %d\n", lab.MaxArms, len(pos))
		return exitUsage
	case commands && !*headless:
		fmt.Fprintln(stderr, "perflab run: commands run with --headless; the workbench takes an experiment file or builds typed in it")
		return exitUsage
	case !commands && len(names) > 0:
		fmt.Fprintln(stderr, "perflab run: -n names commands; an experiment file names its builds with \"name\"")
		return exitUsage
	case len(names) > len(pos):
		fmt.Fprintf(stderr, "perflab run: %d names (-n) for %d commands\n", len(names), len(pos))
		return exitUsage
	}
	if *probe < 0 || *probe > maxProbe {
		fmt.Fprintf(stderr, "perflab run: --probe %v: want 0 (no check) up to %v\n", *probe, maxProbe)
		return exitUsage
	}
	if !*headless {
		if *probe > 0 {
			fmt.Fprintln(stderr, "perflab run: --probe applies with --headless; the workbench sets the stability check in its stepper")
			return exitUsage
		}
		if ov.set() || ex.set() {
			fmt.Fprintln(stderr, "perflab run: --trials, --warmup, --order, --threshold, --stop, --max-trials and --export-* apply with --headless; the workbench sets them in its stepper")
			return exitUsage
		}
		return openRunTUI(ctx, "perflab run", pos[0], args, stdout, stderr)
	}
	var exp *lab.Experiment
	var err error
	source := pos[0]
	if commands {
		exp, err = commandExperiment(pos, names)
		source = "command line"
	} else {
		exp, err = lab.LoadExperiment(pos[0])
	}
	if err == nil {
		if len(device) > 0 {
			exp.SetDevices(device)
		}
		err = ov.apply(exp)
	}
	if err != nil {
		fmt.Fprintln(stderr, "perflab run:", err)
		return exitError
	}
	if !acc.openOr(ctx, "perflab run", stderr) {
		return exitError
	}
	defer acc.close()
	opt := acc.options()
	opt.Realtime, opt.Seed = *realtime, exp.Seed
	r := &headlessRun{cmd: "perflab run", stdout: stdout, stderr: stderr, quiet: *quiet, json: *asJSON, exports: ex}
	return r.run(ctx, engine.Plan{Experiment: *exp, Tool: "perflab " + version, Source: source, Path: *out, Overwrite: *force,
		ProbeS: probe.Seconds(), Realtime: *realtime, HandOffEvery: headlessHandOff}, deviceLab(opt))
}

// headlessHandOff is how often, at most, a headless run takes the events of
// fast local trials: its progress line redraws ten times a second at most
// (redrawGate), and each hand-off costs the trials running meanwhile.
const headlessHandOff = 100 * time.Millisecond

// maxProbe bounds --probe: a stability check longer than a day is a typo.
const maxProbe = 24 * time.Hour

// deviceLab is the engine's way to the real devices.
func deviceLab(opt devices.Options) engine.Lab {
	return engine.Lab{
		Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
			o := opt
			o.Realtime = o.Realtime || realtime
			return devices.Open(ctx, id, o)
		},
		Resolve: func(ctx context.Context, specs []string) ([]string, error) {
			return devices.Resolve(ctx, specs, opt)
		},
	}
}

// headlessRun is one `perflab run --headless`: a view of an engine session
// on stderr (progress) and stdout (the report).
type headlessRun struct {
	cmd            string // the command its messages start with ("perflab run")
	stdout, stderr io.Writer
	quiet, json    bool
	markdown       bool // a GitHub-flavoured summary instead of the table
	width          int  // a suite's table fitted to it (fitWidth; 0: whole)
	exports        runExports
}

// run starts the session, shows it as it goes, then reports it: the
// table (or JSON), the exports, where the session was saved; it returns
// the exit status.
func (h *headlessRun) run(ctx context.Context, p engine.Plan, l engine.Lab) int {
	s, err := engine.Start(ctx, l, p)
	if err != nil {
		fmt.Fprintln(h.stderr, h.cmd+":", err)
		return exitError
	}
	h.announce(s)
	events, fold, final := h.follow(s)
	res := s.Wait()

	if final == nil { // no end event: the run failed before it
		final = h.analyse(s, fold)
	}
	// An error that ended the run is said first: the table (if any) only
	// shows how far it got.
	endErr := engine.EndErr(res.End)
	if endErr != nil && !errors.Is(endErr, context.Canceled) {
		fmt.Fprintln(h.stderr, h.cmd+":", endErr)
	}
	code, rep := h.printReport(s, <-final, events)
	sess := &sessions.Session{Path: s.Path, Header: s.Header, Events: events}
	if err := h.exports.write(sess, rep); err != nil {
		fmt.Fprintln(h.stderr, h.cmd+":", err)
		code = exitError
	}
	if res.Err != nil {
		fmt.Fprintf(h.stderr, "session incomplete: %s holds %d trials: %s; the rest could not be recorded\n",
			s.Path, res.Written.Total, formatCounts(res.Written))
		return exitError
	}
	if res.End != nil && res.End.Stop != "" {
		fmt.Fprintln(h.stderr, fitProse("stopped: "+res.End.Stop, h.width))
	}
	fmt.Fprintln(h.stderr, fitProse(fmt.Sprintf("session saved: %s, %d trials: %s", s.Path, res.Written.Total, formatCounts(res.Written)), h.width))
	switch {
	case endErr == nil:
		return regressionFound(h.stderr, h.cmd, code)
	case errors.Is(endErr, context.Canceled):
		fmt.Fprintln(h.stderr, h.cmd+": cancelled; the table above covers the trials finished so far")
	}
	return exitError
}

// announce says where the session goes and what runs: the device (or
// the pool's), the trials, the order and the seed, and the devices' notes,
// wrapped to h.width (a suite's in a terminal).
func (h *headlessRun) announce(s *engine.Session) {
	var sb strings.Builder // its lines, wrapped to the width at the end
	defer func() { io.WriteString(h.stderr, fitProse(sb.String(), h.width)) }()
	exp := &s.Header.Plan
	info := s.Device
	fmt.Fprintf(&sb, "session: %s\n", s.Path)
	trials := fmt.Sprintf("%d trials per arm", exp.Trials)
	if exp.Stop == lab.StopAuto {
		trials = fmt.Sprintf("stop auto (at most %d trials per arm)", exp.TrialCap())
	}
	if b, ok := exp.Builds[lab.ArmControl]; ok && exp.Suite != nil && b.Bench != nil && b.Bench.Count() > 0 {
		// A suite's trial is one round of one benchmark: say it in rounds.
		k := b.Bench.Count()
		trials = fmt.Sprintf("%d rounds of each of %d benchmark functions (a round: one run of A and one of B)", exp.Trials/k, k)
		if exp.Stop == lab.StopAuto {
			trials = fmt.Sprintf("stop auto, at most %d rounds of each of %d benchmark functions (a round: one run of A and one of B)", exp.MetricRoundsCap(), k)
		}
	}
	if len(s.Devices) > 0 {
		var names []string
		for _, d := range s.Devices {
			names = append(names, fmt.Sprintf("%s (%s)", d.ID, d.Model))
		}
		fmt.Fprintf(&sb, "pool of %d devices: %s; %s + %d warm-up each, order %s, seed %d\n",
			len(s.Devices), strings.Join(names, ", "), trials, exp.Warmup, exp.Order, exp.Seed)
	} else {
		fmt.Fprintf(&sb, "device: %s (%s); %s + %d warm-up, order %s, seed %d\n",
			info.ID, info.Model, trials, exp.Warmup, exp.Order, exp.Seed)
	}
	for _, n := range info.Notes {
		fmt.Fprintf(&sb, "note: %s\n", n)
	}
	for _, d := range s.Devices[min(1, len(s.Devices)):] {
		for _, n := range d.Notes {
			fmt.Fprintf(&sb, "note: %s: %s\n", d.ID, n)
		}
	}
}

// follow shows the session's events as they come: progress, the proxy's
// settings, the stability check's verdict once it is over. It returns the
// events, their fold, and the final analysis, started as soon as the end
// event is in (while the engine syncs and closes the file and the device);
// nil when no end event came.
func (h *headlessRun) follow(s *engine.Session) ([]lab.Event, *engine.Fold, <-chan analysed) {
	exp := &s.Header.Plan
	fold := engine.NewFold(exp)
	var events []lab.Event
	prog := newProgressPrinter(h.stderr, fold, h.quiet)
	saidProxy := false
	var probes []lab.ProbeSample
	var final <-chan analysed
	judgeProbe := func() { // once the check is over: its verdict, as perflab check gives it
		if len(probes) > 0 && !h.quiet {
			fmt.Fprint(h.stderr, "stability check before the first trial:")
			writeStability(h.stderr, analysis.StabilityOf(check.StabilitySamples(probes), analysis.DefaultStabilityOptions()))
		}
		probes = nil
	}
	for it := range s.Events {
		if it.Err != nil {
			fmt.Fprintln(h.stderr, "\nperflab run:", it.Err)
		}
		if it.Event.Type == "" {
			continue
		}
		if e := it.Event; e.Type == lab.EventSettings && e.Settings != nil && !saidProxy {
			if lines := proxyLines(e.Settings.Detail); lines != "" {
				fmt.Fprint(h.stderr, lines)
				saidProxy = true
			}
		}
		if e := it.Event; e.Type == lab.EventProbe && e.Probe != nil {
			probes = append(probes, *e.Probe)
		} else if e.Type == lab.EventTrial || e.Type == lab.EventEnd {
			judgeProbe()
		}
		events = append(events, it.Event)
		fold.Add(it.Event)
		prog.add(it.Event)
		if it.Event.Type == lab.EventEnd && final == nil {
			// The trials are all in: analyse them while the engine syncs
			// and closes the file and the device.
			final = h.analyse(s, fold)
		}
	}
	prog.done()
	return events, fold, final
}

// analysed is the final analysis of a run and the inputs it was made of.
type analysed struct {
	inputs []analysis.MetricInput
	rep    engine.Analysis
}

// analyse starts the final analysis of the trials folded so far, on its own
// goroutine; fold must not change until it is received.
func (h *headlessRun) analyse(s *engine.Session, fold *engine.Fold) <-chan analysed {
	inputs := fold.Inputs()
	ch := make(chan analysed, 1)
	go func() {
		ch <- analysed{inputs, engine.Analyse(&s.Header.Plan, inputs, h.analysisOptions(&s.Header.Plan))}
	}()
	return ch
}

// printReport prints the final analysis as a table (or JSON); it returns
// exitRegression when any metric regressed, else exitOK, and the report.
func (h *headlessRun) printReport(s *engine.Session, a analysed, events []lab.Event) (int, engine.Analysis) {
	rep := a.rep
	rep.Warn(sessions.SetupWarnings(events)...)
	rep.Warn(sessions.HostWarnings(events)...)
	rep.Warn(sessions.TrialNotes(events)...)
	rep.Warn(sessions.FailureNotes(events)...)
	switch {
	case h.json:
		// The summary is of the events seen; the file holds those written
		// (the closing message says how many when they differ).
		sess := &sessions.Session{Path: s.Path, Header: s.Header, Events: events}
		if err := writeSessionReport(h.stdout, sess, rep); err != nil {
			fmt.Fprintln(h.stderr, "perflab:", err)
			return exitError, rep
		}
	case !rep.HasComparison():
		fmt.Fprintln(h.stderr, nothingToCompare(sessions.CountTrials(events, s.Header.Plan.ArmKeys()...)))
	case h.markdown:
		sess := &sessions.Session{Path: s.Path, Header: s.Header, Events: events}
		if err := page.Markdown(h.stdout, page.Input{Session: sess, Reports: rep.Reports()}); err != nil {
			fmt.Fprintln(h.stderr, "perflab:", err)
			return exitError, rep
		}
	default:
		fmt.Fprint(h.stdout, fitProse(rep.TableFit(h.width), h.width))
	}
	return verdictCode(rep), rep
}

// analysisOptions are the plan's analysis options (engine.Options); when
// only the table is printed (no --json, no export), the unpaired estimates
// no table shows for a paired metric are skipped
// (analysis.Options.SkipUnpairedEstimates), which leaves the table as it
// is and saves most of the final report's time.
func (h *headlessRun) analysisOptions(plan *lab.Experiment) analysis.Options {
	opt := engine.Options(plan)
	opt.SkipUnpairedEstimates = !h.json && !h.exports.set()
	return opt
}

// regressionFound says on stderr, in one line, what exit status 3 means
// when code is it (go run's closing "exit status 3" reads like a crash),
// and returns code.
func regressionFound(stderr io.Writer, cmd string, code int) int {
	if code == exitRegression {
		fmt.Fprintf(stderr, "%s: regression found, exit 3\n", cmd)
	}
	return code
}

// verdictCode is exitRegression when any build regressed on any metric,
// else exitOK.
func verdictCode(rep engine.Analysis) int {
	if rep.Regression() {
		return exitRegression
	}
	return exitOK
}

// sessionReport is `report --json`: the compare --json schema plus a
// "session" object.
type sessionReport struct {
	analysis.Report
	// Families and Names are a suite's (engine.Analysis).
	Families []analysis.FamilySize `json:"families,omitempty"`
	Names    string                `json:"names,omitempty"`
	Session  sessions.Summary      `json:"session"`
}

// versusReport is `report --json` of a session of more than two builds:
// compare --json's schema for three or more inputs plus "session".
type versusReport struct {
	analysis.Versus
	Session sessions.Summary `json:"session"`
}

func writeSessionReport(w io.Writer, s *sessions.Session, rep engine.Analysis) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if rep.Versus != nil {
		return enc.Encode(versusReport{Versus: *rep.Versus, Session: s.Summary()})
	}
	return enc.Encode(sessionReport{Report: rep.Report, Families: rep.Families, Names: rep.Names, Session: s.Summary()})
}

// nothingToCompare says why a run or session has no table: the arms
// without a counted trial.
func nothingToCompare(c sessions.Counts) string {
	var none []string
	for _, k := range slices.Sorted(maps.Keys(c.Counted)) {
		if c.Counted[k] == 0 {
			none = append(none, k)
		}
	}
	if len(none) == 0 || len(none) == len(c.Counted) {
		return "no counted trials: nothing to compare"
	}
	return "no counted trials of " + strings.Join(none, ", ") + ": nothing to compare"
}

// formatCounts words a session's counts: counted trials per arm (control
// and treatment, or A, B, C, ...), warm-ups that ran and failures (failed
// warm-ups among them), which add up to c.Total.
func formatCounts(c sessions.Counts) string {
	var parts []string
	if len(c.Counted) > 2 {
		keys := slices.Sorted(maps.Keys(c.Counted))
		var per []string
		for _, k := range keys {
			if n := c.Counted[k]; n > 0 || (k != lab.ArmControl && k != lab.ArmTreatment) {
				per = append(per, fmt.Sprintf("%s %d", k, n))
			}
		}
		parts = append(parts, "counted "+strings.Join(per, " "))
	} else {
		parts = append(parts,
			fmt.Sprintf("%d counted control", c.Counted[lab.ArmControl]),
			fmt.Sprintf("%d counted treatment", c.Counted[lab.ArmTreatment]))
	}
	// Every trial is said once, so the parts add up to the total: the
	// warm-ups that ran, then the failures (with those of the warm-ups).
	if n := c.Warmup - c.WarmupFailed; n > 0 {
		parts = append(parts, fmt.Sprintf("%d warm-up", n))
	}
	failed := 0
	for _, st := range []string{lab.StatusFailed, lab.StatusTimeout, lab.StatusInterrupted} {
		if n := c.ByStatus[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
			failed += n
		}
	}
	if c.WarmupFailed > 0 {
		parts[len(parts)-1] += fmt.Sprintf(" (%d of them warm-up)", c.WarmupFailed)
	}
	return strings.Join(parts, ", ")
}

// proxyLines says, when a run starts the record/replay proxy, where it
// records, which headers it redacts and who may use it; "" without a proxy.
func proxyLines(detail map[string]string) string {
	if detail["proxy_file"] == "" {
		return ""
	}
	out := "proxy: recording " + detail["proxy_file"] + "; redacted headers: " + detail["proxy_redact"] + "\n"
	if a := detail["proxy_access"]; a != "" {
		out += "proxy access: " + a + "\n"
	}
	return out
}
