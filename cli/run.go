package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions"
)

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
