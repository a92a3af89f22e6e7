package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
)

const replayUsage = `Usage: perflab replay SESSION.jsonl [--headless] [--speed X] [--regime N|all]

Replays a saved session: its events come back at the original pace times
--speed (0 = as fast as possible), in the workbench or, with --headless,
as lines on stdout ending with the comparison table. Nothing is executed.
When toggles of the controls or the order split the session into regimes,
the regimes are listed with their toggles and notes and the latest with
enough trials is analysed, as perflab report does.

Examples:
  perflab replay s.jsonl                      # in the workbench
  perflab replay s.jsonl --headless --speed 10
  perflab replay s.jsonl --headless --speed 0 | grep treatment

Manual: docs/sessions.md

Flags:
`

// cmdReplay replays a saved session.
func cmdReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	headless := fs.Bool("headless", false, "print events on stdout instead of opening the workbench")
	speed := fs.Float64("speed", 1, "pace multiplier; 0 replays as fast as possible")
	regime := fs.String("regime", "", "with --headless and toggles of controls or order: N analyses regime N, all pools them (default: the latest with enough trials)")
	pos, code, ok := parseCommandFlags(fs, args, replayUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "perflab replay: want exactly one session file (perflab replay --help)")
		return exitUsage
	}
	if bisect.IsRecord(pos[0]) { // a bisect file: print it as perflab bisect --show does
		return showBisect(pos[0], false, stdout, stderr)
	}
	if *speed < 0 {
		fmt.Fprintln(stderr, "perflab replay: --speed must be 0 (as fast as possible) or more")
		return exitUsage
	}
	if err := lab.CheckRange("--speed", *speed, 0, lab.MaxReplaySpeed); err != nil {
		fmt.Fprintln(stderr, "perflab replay:", err)
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
	// The regimes come from the whole session: a bad --regime is said
	// before the replay, not after it.
	opt := engine.Options(&s.Header.Plan)
	events, rr, err := regimeEvents(s.Events, *regime, opt, s.Header.Plan.Suite != nil)
	if err != nil {
		fmt.Fprintln(stderr, "perflab replay:", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "replaying session %s (%s, %d events) at %s\n", s.Header.ID, s.Header.Device.ID, len(s.Events), speedLabel(*speed))
	fold := engine.NewFold(&s.Header.Plan)
	for e := range sessions.Replay(ctx, s.Events, *speed) {
		fold.Add(e)
		fmt.Fprintln(stdout, describeEvent(e))
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "perflab replay: interrupted")
		return exitError
	}
	if len(rr.list) > 0 {
		// Toggles split the session: analyse the chosen regime's trials only.
		fold = engine.NewFold(&s.Header.Plan)
		for _, e := range events {
			fold.Add(e)
		}
	}
	rep := engine.Analyse(&s.Header.Plan, fold.Inputs(), opt)
	rep.Warn(rr.warnings...)
	fmt.Fprintln(stdout)
	for _, l := range append(rr.list, rr.order...) {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprint(stdout, rep.Table())
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
		if e.Settings.Device != "" {
			parts = append([]string{"on " + e.Settings.Device}, parts...)
		}
		return t + "settings " + strings.Join(parts, " ")
	case e.Probe != nil:
		return fmt.Sprintf("%sprobe %.1f MFLOPS", t, e.Probe.MFLOPS)
	case e.Toggle != nil:
		return fmt.Sprintf("%stoggle %s %s → %s from round %d", t, e.Toggle.What, e.Toggle.From, e.Toggle.To, e.Toggle.Round)
	case e.Note != nil:
		return t + "note " + e.Note.Text
	case e.Device != nil:
		s := t + "device " + e.Device.Device + " " + e.Device.State
		if e.Device.Reason != "" {
			s += ": " + e.Device.Reason
		}
		return s
	case e.Start != nil:
		s := fmt.Sprintf("%sstart %s round %d %s", t, e.Start.Device, e.Start.Round, e.Start.Arm)
		if e.Start.Warmup {
			s += " warm-up"
		}
		return s
	case e.End != nil:
		s := t + "end " + e.End.Reason
		if e.End.Error != "" {
			s += ": " + e.End.Error
		}
		return s
	}
	return t + e.Type
}
