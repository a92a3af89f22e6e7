package cli

import (
	"bytes"

	"context"
	"fmt"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"io"
	"os"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/tui"
)

// historyView is perflab history view: the workbench's history screen
// over every series of the history, each with its change points (the
// detector of history changepoints, with its flags); enter on an alert
// replays its confirmation session in the workbench's replay screen, b
// shows its bisect, and esc comes back to the history.
func historyView(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	pos, o, code, ok := parseHistory("view", args, []string{"history", "min-segment", "alpha", "min-effect"}, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "perflab history view: takes no files (--history FILE names the history)")
		return exitUsage
	}
	series, err := historySeries(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history view:", err)
		return exitError
	}
	st, err := openScreen(stdout, stderr, false)
	if err != nil {
		fmt.Fprintln(stderr, "perflab history view:", err)
		return exitError
	}
	defer st.close()
	screen := st.screen
	screen.NoColor = os.Getenv("NO_COLOR") != ""
	styles := tui.NewStyles(true, screen.NoColor)
	sel, alert := -1, 0 // first: the series of the newest alert
	for {
		v := tui.NewHistoryView(styles, series, sel)
		if sel >= 0 {
			v.SelectAlert(alert)
		}
		if err := tui.Run(ctx, v, screen); err != nil {
			fmt.Fprintln(stderr, "perflab history view:", err)
			return exitError
		}
		if v.Open == "" || ctx.Err() != nil {
			return exitOK
		}
		sel, alert = v.Selected(), v.SelectedAlert()
		// The alert opens in the workbench's own screens; esc (or q)
		// comes back here.
		var err error
		var s *sessions.Session
		var lerr error
		if !bisect.IsRecord(v.Open) {
			s, lerr = sessions.Load(v.Open)
		}
		switch {
		case bisect.IsRecord(v.Open):
			var text bytes.Buffer
			showBisect(v.Open, false, &text, &text)
			err = tui.Run(ctx, tui.NewTextView(styles, "bisect of the alert · "+v.Open, text.String()), screen)
		case lerr != nil:
			err = tui.Run(ctx, tui.NewTextView(styles, "session "+v.Open, lerr.Error()), screen)
		default:
			opt := tuiOptions(ctx, tuiFlags{sessions: tui.DefaultSessionDir()})
			opt.BackQuits = true
			var problems []string
			for _, p := range s.Problems {
				problems = append(problems, p.String())
			}
			r := tui.NewReplay(opt, s.Header.Device, s.Header.Plan, s.Events, 0, problems)
			r.SetReplayPath(v.Open)
			err = tui.Run(ctx, r, screen)
		}
		if err != nil {
			fmt.Fprintln(stderr, "perflab history view:", err)
			return exitError
		}
		if ctx.Err() != nil {
			return exitOK
		}
	}
}

// historySeries reads every series of the history with its change
// points, as the history screen shows them.
func historySeries(ctx context.Context, o *historyOpts) ([]tui.HistorySeries, error) {
	opt := changepoint.Options{MinSegment: o.minSegment, Alpha: o.alpha, MinEffect: o.minEffect}
	if _, err := changepoint.Detect(nil, opt); err != nil {
		return nil, err
	}
	db, err := openHistory(ctx, o, false)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Results(ctx)
	if err != nil {
		return nil, err
	}
	alerts, err := db.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var out []tui.HistorySeries
	for _, s := range history.AllSeries(rows) {
		hs := tui.HistorySeries{Device: s.Device, Metric: s.Metric, Unit: s.Unit, Values: s.Values()}
		for _, p := range s.Points {
			name := p.Build
			if p.Rev != "" {
				name = p.Rev[:min(len(p.Rev), 7)]
			}
			hs.Builds = append(hs.Builds, name)
			hs.Sessions = append(hs.Sessions, p.Session)
		}
		if len(s.Points) >= 2*o.minSegment {
			steps, err := changepoint.Detect(hs.Values, opt)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", s.Device, s.Metric, err)
			}
			for _, st := range steps {
				hs.Steps = append(hs.Steps, tui.HistoryStep{Index: st.Index, DeltaPct: st.DeltaPct.Or(0), P: st.P})
			}
		}
		hs.Alerts = viewAlerts(s, alerts)
		out = append(out, hs)
	}
	return out, nil
}

// viewAlerts places the alerts of perflab watch on series s: each under
// its first bad commit when a bisect named one, else the detector's; the
// key opens the bisect record (the confirmation and the search), else the
// confirmation's session.
func viewAlerts(s history.Series, alerts []history.Alert) []tui.HistoryAlert {
	at := map[string]int{}
	for i, p := range s.Points {
		if p.Rev != "" {
			at[p.Rev] = i
		}
	}
	var out []tui.HistoryAlert
	for _, a := range alerts {
		if a.Device != s.Device || a.Metric != s.Metric {
			continue
		}
		i, ok := at[a.FirstBad]
		if !ok {
			if i, ok = at[a.Rev]; !ok {
				continue
			}
		}
		session := ""
		if len(a.Sessions) > 0 {
			session = a.Sessions[len(a.Sessions)-1]
		}
		what := "not confirmed (" + a.Verdict + ")"
		if a.Confirmed {
			what = "confirmed " + a.Verdict
		}
		first := ""
		if a.FirstBad != "" {
			first = a.FirstBad[:min(len(a.FirstBad), 7)]
		}
		out = append(out, tui.HistoryAlert{ID: int(a.ID), Index: i, Confirmed: a.Confirmed, FirstBad: first, Session: session, Bisect: a.Bisect,
			Text: fmt.Sprintf("alert %d %s %s [%s, %s]", a.ID, what, format.SignedPct(a.DeltaPct), format.SignedPct(a.CILowPct), format.SignedPct(a.CIHighPct))})
	}
	return out
}
