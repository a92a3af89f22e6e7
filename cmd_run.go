package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions"
)

// Exit statuses of run and report.
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitRegression = 3
)

// repeatedFlag is a repeatable string flag.
type repeatedFlag []string

func (l *repeatedFlag) String() string     { return strings.Join(*l, ",") }
func (l *repeatedFlag) Set(s string) error { *l = append(*l, s); return nil }

// parseInterleaved parses flags that may come before, between or after the
// positional arguments and returns the positionals.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseCommandFlags parses a command's flags and positional arguments.
// --help prints usage on stdout (exit 0); a bad flag gets a hint on stderr
// (exit 2). ok is false when the command should return code at once.
func parseCommandFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	pos, err := parseInterleaved(fs, args)
	switch {
	case err == nil:
		return pos, exitOK, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
		return nil, exitOK, false
	}
	fmt.Fprintf(stderr, "see: perflab %s --help\n", fs.Name())
	return nil, exitUsage, false
}

// sessionsDir is where sessions go when --out is not given:
// $XDG_DATA_HOME/perflab/sessions, or ~/.local/share/perflab/sessions.
func sessionsDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "perflab", "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no --out given and no home directory for the default session folder: %w", err)
	}
	return filepath.Join(home, ".local", "share", "perflab", "sessions"), nil
}

const runUsage = `Usage: perflab run EXPERIMENT.json [--headless] [flags]

Runs the control and treatment builds of an experiment file in the chosen
order, with the reset procedure around each trial, records every event to a
session file (synced after each trial) and compares the arms.

Without --headless the workbench opens on the experiment. With --headless
progress and an ETA go to stderr and the comparison table to stdout.
Exit status: 0 no regression found, 3 regression detected, 1 error or
cancelled (the session keeps every finished trial).

The session goes to --out, or to $XDG_DATA_HOME/perflab/sessions/ID.jsonl
(~/.local/share/perflab/sessions) when --out is not given.

Examples:
  perflab run examples/local-aa.json --headless
  perflab run examples/local-regression.json --headless --out /tmp/s.jsonl
  perflab run exp.json --headless --device sim:pixel --json > report.json
  perflab report /tmp/s.jsonl

Flags:
`

// cmdRun runs an experiment file.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	headless := fs.Bool("headless", false, "run without the workbench: progress on stderr, table on stdout")
	out := fs.String("out", "", "session file to write (default: the user's data dir)")
	force := fs.Bool("force", false, "overwrite the --out file if it exists")
	device := fs.String("device", "", "device to run on, overriding the file's \"device\" (local, sim:PRESET, adb:SERIAL)")
	adb := addADBFlag(fs)
	realtime := fs.Bool("realtime", false, "pace a simulated device at wall-clock speed")
	asJSON := fs.Bool("json", false, "print the final report as JSON (compare --json schema plus \"session\")")
	quiet := fs.Bool("quiet", false, "no progress output")
	pos, code, ok := parseCommandFlags(fs, args, runUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "perflab run: want exactly one experiment file (perflab run --help)")
		return exitUsage
	}
	if !*headless {
		return openRunTUI(ctx, pos[0], args, stdout, stderr)
	}
	exp, err := lab.LoadExperiment(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "perflab run:", err)
		return exitError
	}
	if *device != "" {
		exp.Device = *device
	}
	opt := devices.Options{ADBServers: *adb, Realtime: *realtime, Seed: exp.Seed}
	r := &headlessRun{stdout: stdout, stderr: stderr, quiet: *quiet, json: *asJSON}
	return r.run(ctx, exp, pos[0], *out, *force, opt)
}

// headlessRun is one `perflab run --headless`.
type headlessRun struct {
	stdout, stderr io.Writer
	quiet, json    bool
}

func (h *headlessRun) run(ctx context.Context, exp *lab.Experiment, source, out string, force bool, opt devices.Options) int {
	dev, err := devices.Open(ctx, exp.Device, opt)
	if err != nil {
		fmt.Fprintln(h.stderr, "perflab run:", err)
		return exitError
	}
	defer func() {
		if err := dev.Close(); err != nil {
			fmt.Fprintln(h.stderr, "perflab run: closing device:", err)
		}
	}()
	info := dev.Info()
	hdr := sessions.NewHeader("perflab "+version, info, exp)
	hdr.Source = source
	hdr.Host, _ = os.Hostname()
	if out == "" {
		dir, err := sessionsDir()
		if err != nil {
			fmt.Fprintln(h.stderr, "perflab run:", err)
			return exitError
		}
		out = filepath.Join(dir, hdr.ID+".jsonl")
	}
	useSessionProxyFile(exp, out)
	create := sessions.Create
	if force {
		create = sessions.CreateOverwrite
	}
	w, err := create(out, hdr)
	if err != nil {
		fmt.Fprintln(h.stderr, "perflab run:", err)
		return exitError
	}
	fmt.Fprintf(h.stderr, "session: %s\n", out)
	fmt.Fprintf(h.stderr, "device: %s (%s); %d trials per arm + %d warm-up, order %s, seed %d\n",
		info.ID, info.Model, exp.Trials, exp.Warmup, exp.Order, exp.Seed)
	for _, n := range info.Notes {
		fmt.Fprintf(h.stderr, "note: %s\n", n)
	}

	var events []lab.Event
	var end *lab.End
	var writeErr error
	prog := newProgressPrinter(h.stderr, exp, h.quiet)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for e := range lab.NewRunner(dev, exp).Run(runCtx) {
		if writeErr == nil {
			if writeErr = w.Write(e); writeErr != nil {
				// Nothing can be recorded any more: stop the run.
				fmt.Fprintln(h.stderr, "\nperflab run:", writeErr)
				cancel()
			}
		}
		events = append(events, e)
		if e.End != nil {
			end = e.End
		}
		prog.add(e)
	}
	prog.done()
	if err := w.Close(); err != nil && writeErr == nil {
		writeErr = err
		fmt.Fprintln(h.stderr, "perflab run:", err)
	}

	sess := &sessions.Session{Path: out, Header: hdr, Events: events}
	code := h.printReport(sess)
	counts := sessions.CountTrials(events)
	fmt.Fprintf(h.stderr, "session saved: %s (%d trials: %s)\n", out, counts.Total, formatCounts(counts))
	switch {
	case writeErr != nil:
		return exitError
	case end == nil:
		fmt.Fprintln(h.stderr, "perflab run: the run ended without an end event")
		return exitError
	case end.Reason == "cancelled":
		fmt.Fprintln(h.stderr, "perflab run: cancelled; the table above covers the trials finished so far")
		return exitError
	case end.Reason != "completed":
		fmt.Fprintf(h.stderr, "perflab run: %s: %s\n", end.Reason, end.Error)
		return exitError
	}
	return code
}

// printReport analyses a session and prints the table (or JSON); it
// returns exitRegression when any metric regressed, else exitOK.
func (h *headlessRun) printReport(s *sessions.Session) int {
	inputs := sessions.MetricInputs(s.Events)
	rep := analysis.Compare(inputs, s.Options())
	switch {
	case h.json:
		if err := writeSessionReport(h.stdout, s, rep); err != nil {
			fmt.Fprintln(h.stderr, "perflab:", err)
			return exitError
		}
	case len(inputs) == 0:
		fmt.Fprintln(h.stderr, "no counted trials: nothing to compare")
	default:
		fmt.Fprint(h.stdout, analysis.Table(rep))
	}
	return verdictCode(rep)
}

func verdictCode(rep analysis.Report) int {
	for _, m := range rep.Metrics {
		if m.Verdict == analysis.VerdictRegression {
			return exitRegression
		}
	}
	return exitOK
}

// sessionReport is `report --json`: the compare --json schema plus a
// "session" object.
type sessionReport struct {
	analysis.Report
	Session sessions.Summary `json:"session"`
}

func writeSessionReport(w io.Writer, s *sessions.Session, rep analysis.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sessionReport{Report: rep, Session: s.Summary()})
}

func formatCounts(c sessions.Counts) string {
	parts := []string{
		fmt.Sprintf("%d counted control", c.Counted[lab.ArmControl]),
		fmt.Sprintf("%d counted treatment", c.Counted[lab.ArmTreatment]),
	}
	if c.Warmup > 0 {
		parts = append(parts, fmt.Sprintf("%d warm-up", c.Warmup))
	}
	for _, st := range []string{lab.StatusFailed, lab.StatusTimeout} {
		if n := c.ByStatus[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ")
}

// progressPrinter shows progress and an ETA on stderr: one line redrawn in
// place on a terminal, a line every few seconds otherwise. Failed trials
// and live changes always get a line of their own.
type progressPrinter struct {
	redrawGate
	w       io.Writer
	quiet   bool
	tracker *lab.Tracker
	drawn   bool
}

// redrawGate paces progress lines: ten redraws a second on a terminal; in
// a log a line every 5 s or every 10% of the work, so CI logs stay short.
type redrawGate struct {
	tty      bool
	last     time.Time
	lastFrac float64
}

// due reports whether to draw now, and if so remembers the draw.
func (g *redrawGate) due(final bool, frac float64) bool {
	now := time.Now()
	if g.tty {
		if !final && now.Sub(g.last) < 100*time.Millisecond {
			return false
		}
	} else if !final && now.Sub(g.last) < 5*time.Second && frac-g.lastFrac < 0.1 {
		return false
	}
	g.last, g.lastFrac = now, frac
	return true
}

func newProgressPrinter(w io.Writer, exp *lab.Experiment, quiet bool) *progressPrinter {
	return &progressPrinter{redrawGate: redrawGate{tty: runIsTTY(w)}, w: w, quiet: quiet, tracker: lab.NewTracker(exp)}
}

func runIsTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progressPrinter) add(e lab.Event) {
	p.tracker.Add(e)
	if p.quiet {
		return
	}
	switch {
	case e.Trial != nil && e.Trial.Status != lab.StatusOK:
		p.line(fmt.Sprintf("trial %d (%s) %s: %s", e.Trial.Index, e.Trial.Arm, e.Trial.Status, e.Trial.Reason))
	case e.Toggle != nil:
		p.line(fmt.Sprintf("%s: %s → %s from round %d", e.Toggle.What, e.Toggle.From, e.Toggle.To, e.Toggle.Round))
	case e.Note != nil:
		p.line("note: " + e.Note.Text)
	case e.End != nil:
		p.draw(true)
		return
	}
	if e.Trial != nil {
		p.draw(false)
	}
}

// line prints a message on its own line, keeping the progress line below.
func (p *progressPrinter) line(msg string) {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, msg)
	p.drawn = false
}

func (p *progressPrinter) draw(final bool) {
	pr := p.tracker.Progress()
	frac := pr.Fraction()
	if !p.due(final, frac) {
		return
	}
	msg := fmt.Sprintf("[%s] %3.0f%% %d/%d trials (control %d, treatment %d counted", progressBar(frac, 20), frac*100,
		pr.Done, pr.Total, pr.Counted[lab.ArmControl], pr.Counted[lab.ArmTreatment])
	if pr.Failed > 0 {
		msg += fmt.Sprintf(", %d failed", pr.Failed)
	}
	msg += ")  elapsed " + fmtElapsed(pr.Elapsed)
	if !final && pr.Done > 0 {
		msg += "  ETA " + fmtElapsed(pr.ETA)
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K"+msg)
		p.drawn = true
		if final {
			fmt.Fprintln(p.w)
			p.drawn = false
		}
		return
	}
	fmt.Fprintln(p.w, msg)
}

func (p *progressPrinter) done() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}

func progressBar(frac float64, width int) string {
	n := int(frac*float64(width) + 0.5)
	return strings.Repeat("#", n) + strings.Repeat(".", width-n)
}

func fmtElapsed(d time.Duration) string {
	if d < time.Minute {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}

const reportUsage = `Usage: perflab report SESSION.jsonl [--json|--csv|--benchstat|--dump]

Re-analyses a saved session: the counted trials of each arm (status ok, not
warm-ups) are compared as perflab run does at its end. Unreadable lines (a
run killed mid-write, a corrupt line) are reported on stderr with their
line numbers and skipped; everything else loads.

Output formats:
  (default)    the comparison table
  --json       compare --json schema plus a "session" object (id, device,
               plan, trial counts by status, end, problems)
  --csv        one row per trial and metric (failed trials: one row, no metric)
  --benchstat  Go benchmark format, control first; compare with: benchstat -col arm FILE
  --dump       the whole session as one JSON document

Exit status: 0 no regression, 3 regression detected, 1 error.

Examples:
  perflab report ~/.local/share/perflab/sessions/20261122-101500-ab12cd.jsonl
  perflab report s.jsonl --json | jq '.metrics[] | {name, verdict}'
  perflab report s.jsonl --csv > trials.csv
  perflab report s.jsonl --benchstat > s.txt && benchstat -col arm s.txt

Flags:
`

// cmdReport re-analyses a saved session.
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "JSON report (compare --json schema plus \"session\")")
	asCSV := fs.Bool("csv", false, "CSV, one row per trial and metric")
	asBench := fs.Bool("benchstat", false, "Go benchmark format for benchstat -col arm")
	dump := fs.Bool("dump", false, "the whole session as one JSON document")
	alpha := fs.Float64("alpha", 0, "significance level (default: the plan's)")
	confidence := fs.Float64("confidence", 0, "confidence level (default: the plan's)")
	correction := fs.String("correction", "", "holm, bonferroni or none (default holm)")
	test := fs.String("test", "", "primary test: mann-whitney or welch (default mann-whitney)")
	pos, code, ok := parseCommandFlags(fs, args, reportUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "perflab report: want exactly one session file (perflab report --help)")
		return exitUsage
	}
	n := 0
	for _, b := range []bool{*asJSON, *asCSV, *asBench, *dump} {
		if b {
			n++
		}
	}
	if n > 1 {
		fmt.Fprintln(stderr, "perflab report: choose one of --json, --csv, --benchstat, --dump")
		return exitUsage
	}
	// Loading a large session allocates many small, long-lived values; the
	// collector's default pacing spends more on rescanning them than the
	// report spends on statistics. Memory is bounded by the session's size.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	s, err := sessions.Load(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitError
	}
	for _, p := range s.Problems {
		fmt.Fprintf(stderr, "%s:%d: %s\n", pos[0], p.Line, p.Err)
	}
	switch {
	case *asCSV:
		err = sessions.WriteCSV(stdout, s)
	case *asBench:
		err = sessions.WriteBenchstat(stdout, s)
	case *dump:
		err = sessions.WriteJSON(stdout, s)
	}
	if n > 0 && !*asJSON {
		if err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
		return exitOK
	}
	opt := s.Options()
	if *alpha != 0 {
		opt.Alpha = *alpha
	}
	if *confidence != 0 {
		opt.Confidence = *confidence
	}
	if *correction != "" {
		opt.Correction = *correction
	}
	if *test != "" {
		opt.Test = *test
	}
	if err := opt.Validate(); err != nil {
		fmt.Fprintln(stderr, "perflab report:", err)
		return exitUsage
	}
	rep := analysis.Compare(sessions.MetricInputs(s.Events), opt)
	if *asJSON {
		if err := writeSessionReport(stdout, s, rep); err != nil {
			fmt.Fprintln(stderr, "perflab report:", err)
			return exitError
		}
	} else {
		sum := s.Summary()
		fmt.Fprintf(stdout, "session %s  device %s  %s\n", sum.ID, sum.Device.ID, formatCounts(sum.Counts))
		switch {
		case sum.End == nil:
			fmt.Fprintln(stdout, "run did not finish (no end event): showing the trials recorded")
		case sum.End.Reason != "completed":
			fmt.Fprintf(stdout, "run ended: %s %s\n", sum.End.Reason, sum.End.Error)
		}
		fmt.Fprintln(stdout)
		fmt.Fprint(stdout, analysis.Table(rep))
	}
	return verdictCode(rep)
}

const replayUsage = `Usage: perflab replay SESSION.jsonl [--headless] [--speed X]

Replays a saved session: its events come back at the original pace times
--speed (0 = as fast as possible), in the workbench or, with --headless,
as lines on stdout ending with the comparison table. Nothing is executed.

Examples:
  perflab replay s.jsonl                      # in the workbench
  perflab replay s.jsonl --headless --speed 10
  perflab replay s.jsonl --headless --speed 0 | grep treatment

Flags:
`

// cmdReplay replays a saved session.
func cmdReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	headless := fs.Bool("headless", false, "print events on stdout instead of opening the workbench")
	speed := fs.Float64("speed", 1, "pace multiplier; 0 replays as fast as possible")
	pos, code, ok := parseCommandFlags(fs, args, replayUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "perflab replay: want exactly one session file (perflab replay --help)")
		return exitUsage
	}
	if *speed < 0 {
		fmt.Fprintln(stderr, "perflab replay: --speed must be 0 (as fast as possible) or more")
		return exitUsage
	}
	if !*headless {
		return openReplayTUI(ctx, pos[0], *speed, stdout, stderr)
	}
	s, err := sessions.Load(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "perflab replay:", err)
		return exitError
	}
	for _, p := range s.Problems {
		fmt.Fprintf(stderr, "%s:%d: %s\n", pos[0], p.Line, p.Err)
	}
	fmt.Fprintf(stdout, "replaying session %s (%s, %d events) at %s\n", s.Header.ID, s.Header.Device.ID, len(s.Events), speedLabel(*speed))
	var acc sessions.Accumulator
	for e := range sessions.Replay(ctx, s.Events, *speed) {
		acc.Add(e)
		fmt.Fprintln(stdout, describeEvent(e))
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "perflab replay: interrupted")
		return exitError
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, analysis.Table(analysis.Compare(acc.Inputs(), s.Options())))
	return exitOK
}

func speedLabel(speed float64) string {
	if speed == 0 {
		return "full speed"
	}
	return "×" + strconv.FormatFloat(speed, 'g', -1, 64)
}

// describeEvent renders one event as a line for replay and logs.
func describeEvent(e lab.Event) string {
	t := fmt.Sprintf("%9.3fs  ", e.T)
	switch {
	case e.Trial != nil:
		tr := e.Trial
		var b strings.Builder
		fmt.Fprintf(&b, "%strial %-4d round %-3d %-9s %-7s", t, tr.Index, tr.Round, tr.Arm, tr.Status)
		if tr.Warmup {
			b.WriteString(" warm-up")
		}
		for _, m := range tr.Metrics {
			fmt.Fprintf(&b, " %s=%s", m.Name, strconv.FormatFloat(m.Value, 'g', 6, 64))
		}
		if tr.Reason != "" {
			b.WriteString("  (" + tr.Reason + ")")
		}
		return b.String()
	case e.Settings != nil:
		var parts []string
		if e.Settings.Order != "" {
			parts = append(parts, "order="+e.Settings.Order)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Settings.Detail)) {
			parts = append(parts, k+"="+e.Settings.Detail[k])
		}
		if len(e.Settings.Mismatches) > 0 {
			parts = append(parts, "mismatches="+strings.Join(e.Settings.Mismatches, ","))
		}
		return t + "settings " + strings.Join(parts, " ")
	case e.Probe != nil:
		return fmt.Sprintf("%sprobe %.1f MFLOPS", t, e.Probe.MFLOPS)
	case e.Toggle != nil:
		return fmt.Sprintf("%stoggle %s %s → %s from round %d", t, e.Toggle.What, e.Toggle.From, e.Toggle.To, e.Toggle.Round)
	case e.Note != nil:
		return t + "note " + e.Note.Text
	case e.End != nil:
		s := t + "end " + e.End.Reason
		if e.End.Error != "" {
			s += ": " + e.End.Error
		}
		return s
	}
	return t + e.Type
}
