package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/charmbracelet/x/term"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/history"
)

// historyAlerts lists the alerts perflab watch raised, with the
// detector's precision from the marks.
func historyAlerts(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	pos, o, code, ok := parseHistory("alerts", args, []string{"history", "json", "wide"}, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "perflab history alerts: takes no arguments (--history FILE names the history)")
		return exitUsage
	}
	db, err := openHistory(ctx, o, false)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history alerts:", err)
		return exitError
	}
	defer db.Close()
	alerts, err := db.Alerts(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history alerts:", err)
		return exitError
	}
	p := history.PrecisionOf(alerts)
	if o.asJSON {
		err = writeJSONDoc(stdout, struct {
			History   string          `json:"history"`
			Alerts    []history.Alert `json:"alerts"`
			Precision precisionJSON   `json:"precision"`
		}{db.Path(), nonNil(alerts), precisionJSON{p.Marked, p.Real, p.Of(p.Real, p.Marked),
			p.ConfirmedMarked, p.ConfirmedReal, p.Of(p.ConfirmedReal, p.ConfirmedMarked)}})
		if err != nil {
			fmt.Fprintln(stderr, "perflab history alerts:", err)
			return exitError
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "history %s: %d %s\n", db.Path(), len(alerts), sessions.Plural(len(alerts), "alert"))
	printAlerts(stdout, alerts, fitWidth(stdout, o.wide))
	if p.Marked == 0 {
		if len(alerts) > 0 {
			fmt.Fprintln(stdout, "precision: no alert is marked yet (perflab history mark ID real|false)")
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "precision (marked real / marked): all alerts %d/%d = %s; confirmed alerts %d/%d = %s\n",
		p.Real, p.Marked, ratio(p.Of(p.Real, p.Marked)), p.ConfirmedReal, p.ConfirmedMarked, ratio(p.Of(p.ConfirmedReal, p.ConfirmedMarked)))
	return exitOK
}

// precisionJSON is the precision in history alerts --json.
type precisionJSON struct {
	Marked             int            `json:"marked"`
	Real               int            `json:"real"`
	Precision          analysis.Float `json:"precision"`
	ConfirmedMarked    int            `json:"confirmed_marked"`
	ConfirmedReal      int            `json:"confirmed_real"`
	ConfirmedPrecision analysis.Float `json:"confirmed_precision"`
}

func ratio(f analysis.Float) string {
	if !f.Defined() {
		return "-"
	}
	return strconv.FormatFloat(float64(f), 'f', 2, 64)
}

// printAlerts prints alerts (nothing when there are none): as a table,
// or, when width > 0 and the table would be wider, as a block of lines
// per alert wrapped to width.
func printAlerts(w io.Writer, alerts []history.Alert, width int) {
	if len(alerts) == 0 {
		return
	}
	if width > 0 {
		var table bytes.Buffer
		printAlerts(&table, alerts, 0)
		if analysis.WidestLine(table.String()) > width {
			printAlertBlocks(w, alerts, width)
			return
		}
		w.Write(table.Bytes())
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tseries\tcommit\tfirst_bad\tconfirmed\tverdict\tΔ%\tCI\tdetected\tmark\tsessions")
	for _, a := range alerts {
		mark := "-"
		if a.Mark != nil {
			mark = map[bool]string{true: "real", false: "false"}[a.Mark.Real]
		}
		files := append(append([]string{}, a.Sessions...), a.Bisect)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t[%s, %s]\t%s\t%s\t%s\n", a.ID, a.Series, shortRev(a.Rev), shortRev(a.FirstBad),
			map[bool]string{true: "yes", false: "no"}[a.Confirmed], a.Verdict, format.SignedPct(a.DeltaPct),
			format.SignedPct(a.CILowPct), format.SignedPct(a.CIHighPct), format.SignedPct(a.DetectedPct), mark, strings.Join(files, " "))
	}
	tw.Flush()
	// A mark's note is free text: one line each below the table, where it
	// cannot push the columns apart.
	for _, a := range alerts {
		if a.Mark != nil && a.Mark.Note != "" {
			fmt.Fprintf(w, "note on alert %d (marked %s): %s\n", a.ID, map[bool]string{true: "real", false: "false"}[a.Mark.Real], a.Mark.Note)
		}
	}
}

func shortRev(rev string) string {
	switch {
	case rev == "":
		return "-"
	case len(rev) > 12:
		return rev[:12]
	}
	return rev
}

// historyMark records a person's verdict on an alert.
func historyMark(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	pos, o, code, ok := parseHistory("mark", args, []string{"history", "note"}, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 2 || (pos[1] != "real" && pos[1] != "false") {
		fmt.Fprintln(stderr, "perflab history mark: want ALERT-ID real|false (perflab history --help)")
		return exitUsage
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id <= 0 {
		fmt.Fprintf(stderr, "perflab history mark: alert id %q: want a number from perflab history alerts\n", pos[0])
		return exitUsage
	}
	db, err := openHistory(ctx, o, false)
	if err == nil {
		defer db.Close()
		err = db.MarkAlert(ctx, id, pos[1] == "real", o.note)
	}
	if err != nil {
		fmt.Fprintln(stderr, "perflab history mark:", err)
		return exitError
	}
	what := "a false alarm"
	if pos[1] == "real" {
		what = "real: the watch's baseline now starts at its step"
	}
	fmt.Fprintf(stdout, "alert %d marked %s\n", id, what)
	return exitOK
}

// printAlertBlocks prints each alert as a few lines that fit width: what
// and how much, where, its mark and note, and the commands that open it.
func printAlertBlocks(w io.Writer, alerts []history.Alert, width int) {
	for _, a := range alerts {
		what := "not confirmed (" + a.Verdict + ")"
		if a.Confirmed {
			what = "confirmed " + a.Verdict
		}
		lines := []string{fmt.Sprintf("alert %d · %s: %s %s [%s, %s], detected %s", a.ID, a.Series, what,
			format.SignedPct(a.DeltaPct), format.SignedPct(a.CILowPct), format.SignedPct(a.CIHighPct), format.SignedPct(a.DetectedPct))}
		where := "  at " + shortRev(a.Rev)[:min(7, len(shortRev(a.Rev)))]
		if a.FirstBad != "" {
			where += ", first bad " + a.FirstBad[:min(7, len(a.FirstBad))]
			if a.Author != nil {
				where += " by " + a.Author.Name + " <" + a.Author.Email + ">"
			}
		}
		if a.Mark != nil {
			where += ", marked " + map[bool]string{true: "real", false: "false"}[a.Mark.Real]
			if a.Mark.Note != "" {
				where += ": " + a.Mark.Note
			}
		} else {
			where += ", not marked"
		}
		lines = append(lines, where)
		for _, l := range lines {
			fmt.Fprintln(w, format.Wrap(l, width))
		}
		// Commands stay whole, to copy (the terminal folds them).
		if n := len(a.Sessions); n > 0 {
			fmt.Fprintln(w, "  perflab replay "+homeShort(a.Sessions[n-1]))
		}
		if a.Bisect != "" {
			fmt.Fprintln(w, "  perflab bisect --show "+homeShort(a.Bisect))
		}
	}
}

// fitWidth is the width to fit a table to: the terminal's when w is one
// (or $COLUMNS when set), 0 (no limit) for a pipe or a file, or with
// --wide.
func fitWidth(w io.Writer, wide bool) int {
	if wide {
		return 0
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
		if cols, _, err := term.GetSize(f.Fd()); err == nil && cols >= 40 {
			return cols
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c >= 40 {
		return c
	}
	return 0
}

// homeShort writes a path under the home folder with ~, as a shell reads
// it back.
func homeShort(path string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return path
	}
	if rest, ok := strings.CutPrefix(path, home+"/"); ok {
		return "~/" + rest
	}
	return path
}
