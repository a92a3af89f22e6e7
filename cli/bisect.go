package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/tui"
)

const bisectUsage = `Usage: perflab bisect RANGE.json [flags]
       perflab bisect --git DIR --good REV --bad REV --build 'CMD' --run 'CMD {out}' [flags]
       perflab bisect --show BISECT.json [--json]

Finds the build that made things slower in an ordered range of builds, good
first and bad last, as Chromium's Pinpoint does: with repeated
measurements per build and more of them when a comparison is undecided.

1. The ends are compared first. Unless the bad end is a regression against
   the good end (the verdict rules of perflab run, with the threshold
   below), there is nothing to find: exit 3, with the outcome in the
   verdict words: "ends do not differ" only when their interval lies
   within ±threshold, "the bad end is better" for an improvement, and
   "undecided" (with what held it back) when they stay inconclusive after
   every attempt.
2. Binary search: each candidate is compared with the lower end of the
   range still in doubt, on the same device with the same controls and
   order. Every comparison stops automatically (the sequential rule of
   "stop": "auto") once it decides: regression, no change (the interval
   within ±threshold) or improvement; one still undecided at --max-trials
   per arm runs again with twice the trials, up to --attempts sessions,
   and is then called inconclusive (the other half is asked instead).
3. The first bad build is compared with its predecessor: that is the step,
   with its Δ% and confidence interval (one that proves to be no change
   was a false alarm: the search resumes to its right). Then the step is compared with the
   bad end; if that regresses too, the rest is bisected for another step
   (up to --max-steps).

A range is an experiment file whose "builds" is a list (everything else as
for perflab run: device, controls, order, metrics, seed, threshold):

  {"device": "sim:pixel", "order": "random", "seed": 7,
   "controls": {"governor": "recommended", "kill_app": true, ...},
   "builds": [{"name": "v1", "app": "feed"}, {"name": "v2", "app": "feed"},
              {"name": "v3", "app": "feed", "effect_pct": 1}, ...]}

local builds ({"command": [...]}), adb builds ({"apk": ...}) and sim builds
({"app": ..., "effect_pct": ...}) all work; a build may carry "rev".

With --git, the range is the first-parent history from --good to --bad in
the repository DIR. Each commit the search needs is checked out into its own
worktree (under --cache, reused across runs) and built there once with
--build, run by sh with $PERFLAB_REV (the commit) and $PERFLAB_OUT (a
directory for its output) set, from the worktree; --run is the trial
command, with {out} replaced by $PERFLAB_OUT; for a phone, --apk
'{out}/app.apk' names the APK the build yields instead (installed as an adb
build). --experiment gives the device, controls and order (default: local,
random order, 1 warm-up).

Every comparison is a regular session (perflab report / replay SESSION);
the bisect is one JSON file linking them (--out; default next to the
sessions), printed again by --show (or perflab report / replay FILE).
Progress goes to stderr; stdout gets the result table, or with --json one
line:
  {"first_bad":{"index":..,"name":..,"rev":..},"delta_pct":..,"ci_low_pct":..,
   "ci_high_pct":..,"comparisons":[{"a":..,"b":..,"verdict":..,"trials":..}],
   "other_steps":[..],"trials_total":..,"outcome":..}

On a terminal (stdout), without --headless, --json or --quiet, the bisect
screen shows instead of progress lines (--tui asks for it): the builds on
an axis (g ruled good, ? in doubt, b ruled bad, ▲ a step, A/B the two
compared now), each comparison's verdict, Δ% and CI, each measured build's
median with its 95% CI, the running comparison's live Δ% CI and p-value
panels, the builds left and an ETA; x aborts (y/N) keeping what is done,
q quits once it is over; the result table follows on stdout.

Exit status: 0 a first bad build was found; 3 nothing to bisect: the ends
do not differ (their interval lies within ±threshold), the bad end is
better, or the ends' comparison stayed undecided after every attempt (the
outcome line says what held it back: raise --max-trials or --attempts, or
the threshold); 1 error or cancelled (the file keeps what was done); 2
usage.

Examples:
  perflab bisect example:sim-bisect
  perflab bisect example:sim-bisect --headless
  perflab bisect example:sim-bisect --json --max-trials 60 --threshold 0.5%
  perflab bisect --git ~/src/app --good v1.0 --bad main --build 'make && cp app "$PERFLAB_OUT"/' \
      --run '{out}/app --bench'
  perflab bisect --show ~/.local/share/perflab/sessions/bisect-20260101-120000.json

Manual: docs/bisect.md

Flags:
`

// cmdBisect bisects a build range.
func cmdBisect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bisect", flag.ContinueOnError)
	var device repeatedFlag
	fs.Var(&device, "device", "device to run on, overriding the file's \"device\" or \"devices\" (local, sim:PRESET, adb:SERIAL, or a pool selector adb:model=MODEL); repeatable: each comparison runs on the pool")
	var acc deviceAccess
	acc.register(fs)
	realtime := fs.Bool("realtime", false, "pace a simulated device at wall-clock speed")
	asJSON := fs.Bool("json", false, "end with one JSON line on stdout (progress stays on stderr)")
	quiet := fs.Bool("quiet", false, "no progress output")
	useTUI := fs.Bool("tui", false, "watch the bisect on the bisect screen (the default at a terminal; with stdout redirected it draws on the terminal and stdout gets the table; fails without a terminal)")
	headless := fs.Bool("headless", false, "no bisect screen: progress lines on stderr, the result on stdout")
	out := fs.String("out", "", "bisect `FILE` to write (default: bisect-TIME.json beside the sessions)")
	dir := fs.String("dir", "", "folder for the sessions (default: $XDG_DATA_HOME/perflab/sessions)")
	show := fs.String("show", "", "print the bisect `FILE` written earlier, run nothing")
	var threshold float64
	fs.Var(percentFlag{&threshold}, "threshold", "practical threshold, e.g. 0.5%: a comparison within ±threshold is \"no change\" (default: the file's, else 0.5%)")
	maxTrials := fs.Int("max-trials", bisect.DefaultMaxTrials, "counted trials per arm at most in a comparison's first session")
	attempts := fs.Int("attempts", bisect.DefaultAttempts, "sessions an undecided comparison gets (each with twice the trials) before it is called inconclusive")
	metric := fs.String("metric", "", "the metric that decides (default: the file's first metric, else the first one measured); e.g. work for a command printing PERFLAB_METRIC work=N")
	maxSteps := fs.Int("max-steps", bisect.DefaultMaxSteps, "steps to look for at most")
	var g gitFlags
	g.register(fs)
	pos, code, ok := parseCommandFlags(fs, args, bisectUsage, stdout, stderr)
	if !ok {
		return code
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "perflab bisect: %s (perflab bisect --help)\n", msg)
		return exitUsage
	}
	if *show != "" {
		if len(pos) > 0 || g.set() {
			return usage("--show prints a bisect file; it takes no range")
		}
		return showBisect(*show, *asJSON, stdout, stderr)
	}
	var exp *lab.Experiment
	var cands []bisect.Candidate
	var resolve func(context.Context, bisect.Candidate) (lab.Build, error)
	var err error
	switch {
	case g.set() && len(pos) > 0:
		return usage("give a range file or --git, not both")
	case g.set():
		if msg := g.check(); msg != "" {
			return usage(msg)
		}
		exp, cands, resolve, err = g.load(ctx)
	case len(pos) == 1:
		exp, cands, err = bisect.LoadRange(pos[0])
	case len(pos) == 0:
		return usage("want a range file (an experiment whose \"builds\" is a list) or --git DIR")
	default:
		return usage(fmt.Sprintf("want one range file, got %q", strings.Join(pos, " ")))
	}
	if err != nil {
		fmt.Fprintln(stderr, "perflab bisect:", err)
		return exitError
	}
	if len(device) > 0 {
		exp.SetDevices(device)
	}
	if *metric != "" {
		exp.Metrics = append([]string{*metric}, slices.DeleteFunc(exp.Metrics, func(m string) bool { return m == *metric })...)
	}
	sessDir := *dir
	if sessDir == "" {
		if sessDir, err = engine.DefaultDir(); err != nil {
			fmt.Fprintln(stderr, "perflab bisect:", err)
			return exitError
		}
	}
	path := *out
	if path == "" {
		path = filepath.Join(sessDir, "bisect-"+time.Now().Format("20060102-150405")+".json")
	}
	cfg := bisect.Config{Candidates: cands, Template: *exp, Threshold: threshold, MaxTrials: *maxTrials,
		Attempts: *attempts, MaxSteps: *maxSteps, Resolve: resolve, Tool: "perflab " + version, Dir: sessDir,
		Source: "bisect", Realtime: *realtime}
	if *maxSteps < 1 {
		return usage(fmt.Sprintf("--max-steps %d: want at least 1", *maxSteps))
	}
	if !acc.openOr(ctx, "perflab bisect", stderr) {
		return exitError
	}
	defer acc.close()
	opt := acc.options()
	opt.Realtime = *realtime
	l := deviceLab(opt)
	if !*quiet {
		fmt.Fprintf(stderr, "bisect: %d builds on %s, order %s, seed %d\n", len(cands), strings.Join(exp.DeviceList(), ", "), exp.Order, exp.Seed)
	}
	screen, msg := bisectScreen(*useTUI, *headless, *asJSON, *quiet, isTerminal(stdout) || isTerminal(os.Stdin) && isTerminal(stderr))
	if msg != "" {
		return usage(msg)
	}
	var rec *bisect.Record
	if screen {
		rec, err = runBisectTUI(ctx, l, cfg, stdout, stderr)
	} else {
		rec, err = bisect.Run(ctx, l, cfg, func(ev bisect.Event) {
			if !*quiet {
				bisectProgress(stderr, cands, ev)
			}
		})
	}
	if rec == nil {
		fmt.Fprintln(stderr, "perflab bisect:", err)
		return exitUsage // the configuration was refused before anything ran
	}
	if serr := rec.Save(path); serr != nil {
		fmt.Fprintln(stderr, "perflab bisect:", serr)
		return exitError
	}
	code = printBisect(stdout, stderr, rec, *asJSON)
	fmt.Fprintf(stderr, "bisect saved: %s (perflab bisect --show %s)\n", path, path)
	if err != nil {
		fmt.Fprintln(stderr, "perflab bisect:", err)
		return exitError
	}
	return code
}

// bisectProgress prints one line per decided comparison and found step.
func bisectProgress(w io.Writer, cands []bisect.Candidate, ev bisect.Event) {
	switch ev.Kind {
	case bisect.KindDone:
		c := ev.Comparison
		fmt.Fprintf(w, "  %s: %d %s → %d %s: %s, Δ %s [%s, %s], %d trials; in doubt: %d %s; %d trials so far\n",
			c.Purpose, c.A, cands[c.A].Name, c.B, cands[c.B].Name, c.Verdict, format.SignedPct(c.DeltaPct),
			format.SignedPct(c.CILowPct), format.SignedPct(c.CIHighPct), c.Trials, ev.Left, format.Plural(ev.Left, "build", "builds"), ev.TrialsTotal)
	case bisect.KindStart:
		if ev.Attempt > 0 {
			fmt.Fprintf(w, "  %d → %d undecided: attempt %d with more trials\n", ev.Comparison.A, ev.Comparison.B, ev.Attempt+1)
		}
	case bisect.KindStep:
		fmt.Fprintf(w, "step found at build %d (%s)\n", ev.Step.Index, ev.Step.Name)
	}
}

// printBisect prints a bisect record: the JSON line, or the comparisons
// and the result. It returns the exit status the outcome calls for.
func printBisect(stdout, stderr io.Writer, rec *bisect.Record, asJSON bool) int {
	code := exitOK
	switch rec.Outcome {
	case bisect.OutcomeCulprit:
	case bisect.OutcomeNoDiff, bisect.OutcomeImproved, bisect.OutcomeUndecided:
		code = exitRegression // nothing to bisect (documented: exit 3)
	default:
		code = exitError
	}
	if asJSON {
		line, err := json.Marshal(rec.Summary())
		if err != nil {
			fmt.Fprintln(stderr, "perflab bisect:", err)
			return exitError
		}
		fmt.Fprintln(stdout, string(line))
		return code
	}
	name := func(i int) string {
		if i < 0 || i >= len(rec.Candidates) {
			return "?"
		}
		c := rec.Candidates[i]
		short, _, _ := strings.Cut(c.Name, " ")
		if c.Rev != "" && (short == "" || !strings.HasPrefix(c.Rev, short)) {
			return c.Name + " (" + c.Rev + ")"
		}
		return c.Name
	}
	fmt.Fprintf(stdout, "bisect of %d builds on %s, metric %s, threshold %g%%: %s\n", len(rec.Candidates), rec.Device, rec.Metric, rec.Threshold, rec.Outcome)
	if rec.Held != "" {
		fmt.Fprintf(stdout, "held back: %s\n", rec.Held)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  compared\tpurpose\tverdict\tΔ%\tCI\ttrials\tsession")
	for _, c := range rec.Comparisons {
		last := ""
		if n := len(c.Sessions); n > 0 {
			last = c.Sessions[n-1]
			if n > 1 {
				last += fmt.Sprintf(" (+%d earlier)", n-1)
			}
		}
		fmt.Fprintf(tw, "  %d → %d\t%s\t%s\t%s\t[%s, %s]\t%d\t%s\n", c.A, c.B, c.Purpose, c.Verdict, format.SignedPct(c.DeltaPct),
			format.SignedPct(c.CILowPct), format.SignedPct(c.CIHighPct), c.Trials, last)
	}
	tw.Flush()
	step := func(label string, s bisect.Step) {
		fmt.Fprintf(stdout, "%s: build %d, %s: Δ %s [%s, %s] against build %d (%s)\n", label, s.Index, name(s.Index),
			format.SignedPct(s.DeltaPct), format.SignedPct(s.CILowPct), format.SignedPct(s.CIHighPct), s.Index-1, s.Verdict)
	}
	if rec.FirstBad != nil {
		step("first bad", *rec.FirstBad)
	}
	for _, s := range rec.OtherSteps {
		step("other step", s)
	}
	if rec.Error != "" {
		fmt.Fprintln(stdout, "error:", rec.Error)
	}
	fmt.Fprintf(stdout, "trials: %d in %d comparisons\n", rec.TrialsTotal, len(rec.Comparisons))
	return code
}

// showBisect prints the bisect file at path (bisect --show, report and
// replay of a bisect file).
func showBisect(path string, asJSON bool, stdout, stderr io.Writer) int {
	rec, err := bisect.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, "perflab:", err)
		return exitError
	}
	return printBisect(stdout, stderr, rec, asJSON)
}

// bisectScreen says whether the bisect screen shows: asked with --tui, or
// by default when there is a terminal to draw on (stdout, or stdin and
// stderr with stdout redirected: pickScreenPlace) and none of --headless,
// --json, --quiet is given; msg refuses contradictory flags.
func bisectScreen(tuiFlag, headless, asJSON, quiet, terminal bool) (screen bool, msg string) {
	switch {
	case tuiFlag && headless:
		return false, "--tui and --headless contradict each other"
	case tuiFlag:
		return true, ""
	}
	return terminal && !headless && !asJSON && !quiet, ""
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// runBisectTUI runs the bisect with the bisect screen in front.
func runBisectTUI(ctx context.Context, l engine.Lab, cfg bisect.Config, stdout, stderr io.Writer) (*bisect.Record, error) {
	st, err := openScreen(stdout, stderr, true)
	if err != nil {
		return nil, fmt.Errorf("the bisect screen %w", err)
	}
	defer st.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan bisect.Event, 256)
	type result struct {
		rec *bisect.Record
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer close(events)
		rec, err := bisect.Run(ctx, l, cfg, func(ev bisect.Event) {
			select {
			case events <- ev:
			case <-ctx.Done():
			}
		})
		done <- result{rec, err}
	}()
	screen := st.screen
	screen.NoColor = os.Getenv("NO_COLOR") != ""
	v := tui.NewBisectView(tui.NewStyles(true, screen.NoColor), cfg.Candidates, events, cancel)
	if err := tui.Run(ctx, v, screen); err != nil {
		fmt.Fprintln(stderr, "perflab bisect:", err)
	}
	cancel() // quitting the screen ends the bisect; what is done is kept
	go func() {
		for range events { // let the bisect finish its last sends
		}
	}()
	r := <-done
	return r.rec, r.err
}
