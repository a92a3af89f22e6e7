package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/history"
)

const historyUsage = `Usage: perflab history import [--history FILE] SESSION...
       perflab history import [--history FILE] --csv FILE [--device NAME]
       perflab history export [--history FILE] [--csv | --json]
       perflab history changepoints [--history FILE] [--json] [--min-segment N] [--alpha A] [--min-effect S]
       perflab history view [--history FILE] [--min-segment N] [--alpha A]
       perflab history alerts [--history FILE] [--json]
       perflab history mark [--history FILE] [--note TEXT] ALERT-ID real|false
       perflab history copy FROM TO

The results history: what every experiment measured, kept across
experiments in one SQLite file, so that a metric can be followed over
commits and its steps found. A team shares one on a PostgreSQL server:
--history postgres://USER@HOST:PORT/DB (or $PERFLAB_HISTORY), the password
from the URL, PGPASSWORD or ~/.pgpass (PGPASSFILE) as libpq reads them,
never printed; many labs and CI jobs write to it at once.

copy moves a history between a file and a server, either way, into an
empty one: every row with its ids, in one transaction, then the row
counts and a checksum of both sides compared.

import adds sessions of perflab run, suite or bisect (a bisect record brings
every session it ran, each build with its commit): one row per device,
build and metric, with the build's n and median and, for a build compared
with the experiment's control, the paired Δ%, its interval and the verdict,
as perflab report gives them. A session already in the history adds
nothing, so importing a folder again is harmless. --csv FILE adds a
history kept elsewhere, laid out as Apache Otava reads it: a header, a
time and/or commit column (time, timestamp, date; commit, rev, revision),
then one column per metric, a line per build in order; an empty cell is a
missing value. A bad line is an error naming the file, line and field, and
nothing of that file is imported. --device names the CSV's device (default
csv:FILENAME).

export writes every row, as CSV (default) or --json.

changepoints looks for steps in every series (a device's metric over its
builds, each build's median once, in commit order or else the order the
runs were made): E-divisive means (Matteson & James 2014) proposes where
a series splits, a step test under the builds' autocorrelation decides
(generalised least squares under AR(1) noise, its p taken over all the
splits searched, below --alpha); a step that a straight line fits as
well is a drift and left out; a side needs --min-segment points, so one
noisy point is never a step; a step smaller than --min-effect standard
deviations of the noise around it (default 1) is left out. Per step:
series, index (the first build of the new level), commit (or build) and
time, before and after (the 20% trimmed means of the segments on either
side), delta_pct and p.

view is the workbench's history screen: the series listed (up/down), the
selected one charted over its builds with its change points (^) and
alerts (! confirmed, ? not) marked under it; tab picks an alert, enter
replays its session, and the screen comes back when the replay ends.

alerts lists the steps perflab watch found and re-measured (per alert:
series, commit of the step, first_bad when a bisect named one, confirmed,
the confirmation's verdict, Δ% and CI, the detector's Δ, the mark, the
session and bisect files), then the precision from the marks: marked real
/ marked. mark records whether an alert was real or a false alarm; a mark
"real" resets the watch's baseline: its detector then only searches the
series from that step on (as Conbench does).

The history file is $XDG_DATA_HOME/perflab/history.db (beside the sessions
folder) unless --history names another. Several perflab processes can use
it at once; each import is one transaction, so a killed perflab leaves it
as it was. A file that is not a perflab history is refused, never written.

Exit status: 0, 1 error (a bad file, an unreadable history), 2 bad flags.

Examples:
  perflab history import cli/testdata/sim-effect.jsonl
  perflab history import --csv example:history.csv
  perflab history changepoints
  perflab history changepoints --json --alpha 0.001
  perflab history export --json
  perflab history view --history team.db
  perflab history alerts
  perflab history mark 3 false --note "a noisy runner"

Manual: docs/history.md

Flags:
`

// cmdHistory dispatches perflab history's subcommands.
func cmdHistory(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		w, code := stdout, exitOK
		if len(args) == 0 {
			w, code = stderr, exitUsage
		}
		fs, _ := newHistoryFlags("history")
		fs.SetOutput(w)
		fmt.Fprint(w, historyUsage)
		fs.PrintDefaults()
		return code
	}
	switch args[0] {
	case "import":
		return historyImport(ctx, args[1:], stdout, stderr)
	case "export":
		return historyExport(ctx, args[1:], stdout, stderr)
	case "changepoints":
		return historyChangepoints(ctx, args[1:], stdout, stderr)
	case "view":
		return historyView(ctx, args[1:], stdout, stderr)
	case "alerts":
		return historyAlerts(ctx, args[1:], stdout, stderr)
	case "mark":
		return historyMark(ctx, args[1:], stdout, stderr)
	case "copy":
		return historyCopy(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "perflab history: unknown subcommand %q: import, export, changepoints, view, alerts, mark or copy (perflab history --help)\n", args[0])
	return exitUsage
}

// historyOpts are every history subcommand's flags; each subcommand
// uses its own and refuses the others'.
type historyOpts struct {
	file, csv, device, note string
	asCSV, asJSON, wide     bool
	minSegment              int
	alpha, minEffect        float64
}

// newHistoryFlags is the flag set of a history subcommand; the help
// shows them all.
func newHistoryFlags(name string) (*flag.FlagSet, *historyOpts) {
	o := &historyOpts{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&o.file, "history", "", "the history: a `FILE`, or postgres://USER@HOST/DB for a shared one (default $PERFLAB_HISTORY, else $XDG_DATA_HOME/perflab/history.db)")
	fs.StringVar(&o.csv, "csv", "", "import: a CSV history `FILE` (time and/or commit, then one column per metric)")
	fs.StringVar(&o.device, "device", "", "import --csv: the CSV's device `NAME` (default csv:FILENAME)")
	fs.BoolVar(&o.asCSV, "csv-out", false, "export: CSV, the default (export --csv means the same)")
	fs.BoolVar(&o.asJSON, "json", false, "export, changepoints, alerts: JSON")
	fs.StringVar(&o.note, "note", "", "mark: a note kept with the mark")
	fs.BoolVar(&o.wide, "wide", false, "alerts: the whole table, however wide (default on a terminal: fitted to its width)")
	fs.IntVar(&o.minSegment, "min-segment", changepoint.DefaultMinSegment, "changepoints: the fewest builds on each side of a step (at least 2)")
	fs.Float64Var(&o.alpha, "alpha", changepoint.DefaultAlpha, "changepoints: a step's p (step test under AR(1) noise, the splits searched accounted for) must be below `A`")
	fs.Float64Var(&o.minEffect, "min-effect", changepoint.DefaultMinEffect, "changepoints: the smallest step reported, in standard deviations of the noise around it (`S`; negative: any)")
	return fs, o
}

// parseHistory parses a subcommand's flags, allowing only those in
// allowed (by name).
func parseHistory(name string, args []string, allowed []string, stdout, stderr io.Writer) ([]string, *historyOpts, int, bool) {
	fs, o := newHistoryFlags("history " + name)
	pos, code, ok := parseCommandFlags(fs, args, historyUsage, stdout, stderr)
	if !ok {
		return nil, nil, code, false
	}
	bad := ""
	fs.Visit(func(f *flag.Flag) {
		for _, a := range allowed {
			if f.Name == a {
				return
			}
		}
		bad = f.Name
	})
	if bad != "" {
		fmt.Fprintf(stderr, "perflab history %s: --%s is not a flag of %s (perflab history --help)\n", name, bad, name)
		return nil, nil, exitUsage, false
	}
	return pos, o, exitOK, true
}

// openHistory opens the history the flags name; only import (create)
// makes a new one, the other subcommands say there is none.
func openHistory(ctx context.Context, o *historyOpts, create bool) (*history.DB, error) {
	path := o.file
	if path == "" {
		path = os.Getenv("PERFLAB_HISTORY")
	}
	if path == "" {
		p, err := history.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	if !create {
		return history.OpenExisting(ctx, path)
	}
	return history.Open(ctx, path)
}

func historyImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	pos, o, code, ok := parseHistory("import", args, []string{"history", "csv", "device"}, stdout, stderr)
	if !ok {
		return code
	}
	if o.csv == "" && len(pos) == 0 {
		fmt.Fprintln(stderr, "perflab history import: name session files, or --csv FILE (perflab history --help)")
		return exitUsage
	}
	if o.device != "" && o.csv == "" {
		fmt.Fprintln(stderr, "perflab history import: --device names a CSV's device; give --csv FILE")
		return exitUsage
	}
	db, err := openHistory(ctx, o, true)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history import:", err)
		return exitError
	}
	defer db.Close()
	var total history.Imported
	code = exitOK
	report := func(im history.Imported, err error) {
		if err != nil {
			fmt.Fprintln(stderr, "perflab history import:", err)
			code = exitError
			return
		}
		total.Runs += im.Runs
		total.Rows += im.Rows
		total.Known += im.Known
		if im.Runs == 0 && im.Known > 0 {
			fmt.Fprintf(stdout, "%s: already in the history\n", im.File)
			return
		}
		fmt.Fprintf(stdout, "%s: %s, %s\n", im.File, sessions.Count(im.Runs, "run"), sessions.Count(im.Rows, "row"))
	}
	if o.csv != "" {
		report(db.ImportCSV(ctx, o.csv, o.device))
	}
	for _, p := range pos {
		report(db.ImportFile(ctx, p))
	}
	fmt.Fprintf(stdout, "history %s: %s and %s added", db.Path(), sessions.Count(total.Runs, "run"), sessions.Count(total.Rows, "row"))
	if total.Known > 0 {
		fmt.Fprintf(stdout, ", %s already there", sessions.Count(total.Known, "run"))
	}
	fmt.Fprintln(stdout)
	return code
}

func historyExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// export --csv is a switch here, where import's --csv takes a file.
	for i, a := range args {
		if a == "--csv" || a == "-csv" {
			args[i] = "--csv-out"
		}
	}
	pos, o, code, ok := parseHistory("export", args, []string{"history", "csv-out", "json"}, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 || (o.asCSV && o.asJSON) {
		fmt.Fprintln(stderr, "perflab history export: takes no files, and one of --csv or --json (perflab history --help)")
		return exitUsage
	}
	db, err := openHistory(ctx, o, false)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history export:", err)
		return exitError
	}
	defer db.Close()
	rows, err := db.Results(ctx)
	if err == nil {
		if o.asJSON {
			err = writeJSONDoc(stdout, struct {
				History string           `json:"history"`
				Results []history.Result `json:"results"`
			}{db.Path(), nonNil(rows)})
		} else {
			err = writeHistoryCSV(stdout, rows)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "perflab history export:", err)
		return exitError
	}
	return exitOK
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func writeJSONDoc(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeHistoryCSV writes the rows with a header; undefined numbers are
// empty cells.
func writeHistoryCSV(w io.Writer, rows []history.Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"device", "metric", "unit", "build", "commit", "time", "control", "n", "median",
		"delta_pct", "ci_low_pct", "ci_high_pct", "verdict", "kind", "session"})
	for _, r := range rows {
		cw.Write([]string{r.Device, r.Metric, r.Unit, r.Build, r.Rev, r.RevTime, r.Control, strconv.Itoa(r.N),
			cell(r.Median), cell(r.DeltaPct), cell(r.CILowPct), cell(r.CIHighPct), r.Verdict, r.Kind, r.Session})
	}
	cw.Flush()
	return cw.Error()
}

func cell(f analysis.Float) string {
	if !f.Defined() {
		return ""
	}
	return strconv.FormatFloat(float64(f), 'g', -1, 64)
}

// historyStep is one change point of a series, as changepoints lists it:
// the series and the first build of the new level, then the step's own
// fields (index, before, after, delta_pct, p, n_before, n_after).
type historyStep struct {
	Series string `json:"series"` // device/metric
	Device string `json:"device"`
	Metric string `json:"metric"`
	Unit   string `json:"unit,omitempty"`
	Build  string `json:"build"`
	Commit string `json:"commit,omitempty"`
	Time   string `json:"time,omitempty"`
	changepoint.Step
}

func historyChangepoints(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	pos, o, code, ok := parseHistory("changepoints", args, []string{"history", "json", "min-segment", "alpha", "min-effect"}, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "perflab history changepoints: takes no files (--history FILE names the history)")
		return exitUsage
	}
	opt := changepoint.Options{MinSegment: o.minSegment, Alpha: o.alpha, MinEffect: o.minEffect}
	if _, err := changepoint.Detect(nil, opt); err != nil {
		fmt.Fprintln(stderr, "perflab history changepoints:", err)
		return exitUsage
	}
	db, err := openHistory(ctx, o, false)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history changepoints:", err)
		return exitError
	}
	defer db.Close()
	rows, err := db.Results(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history changepoints:", err)
		return exitError
	}
	series := history.AllSeries(rows)
	steps := []historyStep{}
	short := 0
	for _, s := range series {
		if len(s.Points) < 2*o.minSegment {
			short++
			continue
		}
		found, err := changepoint.Detect(s.Values(), opt)
		if err != nil {
			fmt.Fprintf(stderr, "perflab history changepoints: %s/%s: %v\n", s.Device, s.Metric, err)
			return exitError
		}
		for _, f := range found {
			p := s.Points[f.Index]
			steps = append(steps, historyStep{Series: s.Device + "/" + s.Metric, Device: s.Device, Metric: s.Metric, Unit: s.Unit,
				Build: p.Build, Commit: p.Rev, Time: p.RevTime, Step: f})
		}
	}
	if o.asJSON {
		err = writeJSONDoc(stdout, struct {
			History    string        `json:"history"`
			MinSegment int           `json:"min_segment"`
			Alpha      float64       `json:"alpha"`
			Series     int           `json:"series"`
			TooShort   int           `json:"series_too_short"`
			Steps      []historyStep `json:"steps"`
		}{db.Path(), o.minSegment, o.alpha, len(series), short, steps})
	} else {
		err = writeChangepoints(stdout, db.Path(), opt, len(series), short, steps)
	}
	if err != nil {
		fmt.Fprintln(stderr, "perflab history changepoints:", err)
		return exitError
	}
	return exitOK
}

// writeChangepoints prints the steps as a table after a line saying what
// was searched and how.
func writeChangepoints(w io.Writer, path string, opt changepoint.Options, series, short int, steps []historyStep) error {
	fmt.Fprintf(w, "history %s: %d series searched", path, series-short)
	if short > 0 {
		fmt.Fprintf(w, ", %d with fewer than %d builds not", short, 2*opt.MinSegment)
	}
	fmt.Fprintf(w, " (E-divisive means, GLS step test under AR(1) noise, p over the splits < %g, at least %d builds a side)\n", opt.Alpha, opt.MinSegment)
	if len(steps) == 0 {
		fmt.Fprintln(w, "no steps")
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "series\tindex\tcommit\ttime\tbefore\tafter\tdelta_pct\tp")
	for _, s := range steps {
		commit := s.Commit
		if commit == "" {
			commit = s.Build
		}
		if len(commit) > 12 && s.Commit != "" {
			commit = commit[:12]
		}
		t := s.Time
		if t == "" {
			t = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Series, s.Index, commit, t,
			num(s.Before), num(s.After), pct(s.DeltaPct), analysis.FormatP(s.P, opt.Alpha, 3))
	}
	return tw.Flush()
}

// num prints a level with 4 significant digits.
func num(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

func pct(f analysis.Float) string {
	if !f.Defined() || math.IsInf(float64(f), 0) {
		return "-"
	}
	return fmt.Sprintf("%+.2f%%", float64(f))
}

// historyCopy copies one history into another, empty one (a file to a
// server or back) and says what it compared.
func historyCopy(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	pos, _, code, ok := parseHistory("copy", args, nil, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "perflab history copy: want FROM and TO (a file or postgres://…; perflab history --help)")
		return exitUsage
	}
	from, err := history.OpenExisting(ctx, pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "perflab history copy:", err)
		return exitError
	}
	defer from.Close()
	to, err := history.Open(ctx, pos[1])
	if err != nil {
		fmt.Fprintln(stderr, "perflab history copy:", err)
		return exitError
	}
	defer to.Close()
	c, err := history.Copy(ctx, from, to)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history copy:", err)
		return exitError
	}
	var parts []string
	for _, t := range c.Tables {
		parts = append(parts, fmt.Sprintf("%s %d", t.Table, t.Rows))
	}
	fmt.Fprintf(stdout, "copied %s to %s: %s; the same on both sides (%s)\n", from.Path(), to.Path(), strings.Join(parts, ", "), c.Checksum)
	return exitOK
}
