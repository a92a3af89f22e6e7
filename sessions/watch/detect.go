package watch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/history"
)

// Window is how far on either side of a detected step the confirmation
// reaches: the detector places a step within ±1 build, so the commit
// before the step may be one earlier and the first of the new level one
// later. The confirmation compares the last build before the window with
// the first one after it.
const Window = 1

// Series returns the watch's series (this device, the decisive metric,
// only the watch's own runs) and where its baseline starts: after the
// latest alert marked real, whose step the detector is then no longer
// shown (as Conbench resets its baseline when a step is accepted).
func (w *Watcher) Series(ctx context.Context) (history.Series, int, []history.Alert, error) {
	rows, err := w.cfg.History.Results(ctx)
	if err != nil {
		return history.Series{}, 0, nil, err
	}
	var mine []history.Result
	for _, r := range rows {
		if r.Kind != history.KindWatch || r.Device != w.device {
			continue
		}
		if w.metric == "" && r.Control != "" {
			w.metric = r.Metric
		}
		mine = append(mine, r)
	}
	var s history.Series
	for _, x := range history.AllSeries(mine) {
		if x.Metric == w.metric {
			s = x
		}
	}
	all, err := w.cfg.History.Alerts(ctx)
	if err != nil {
		return s, 0, nil, err
	}
	var alerts []history.Alert
	for _, a := range all {
		if a.Device == w.device && a.Metric == w.metric {
			alerts = append(alerts, a)
		}
	}
	return s, Baseline(s, alerts), alerts, nil
}

// Baseline is the index of s where the detector starts: the step of the
// latest-placed alert marked real (its first bad commit when a bisect
// named one, else the detector's commit), 0 when none is.
func Baseline(s history.Series, alerts []history.Alert) int {
	at := map[string]int{}
	for i, p := range s.Points {
		if p.Rev != "" {
			at[p.Rev] = i
		}
	}
	start := 0
	for _, a := range alerts {
		if a.Mark == nil || !a.Mark.Real {
			continue
		}
		rev := a.Rev
		if a.FirstBad != "" {
			rev = a.FirstBad
		}
		if i, ok := at[rev]; ok && i > start {
			start = i
		}
	}
	return start
}

// detect searches the series from its baseline and confirms each step
// that has no alert yet: one whose window holds no earlier alert's commit
// or first bad commit.
func (w *Watcher) detect(ctx context.Context) ([]history.Alert, error) {
	s, start, alerts, err := w.Series(ctx)
	if err != nil {
		return nil, err
	}
	points := s.Points[start:]
	opt := w.cfg.Detect
	if opt.MinSegment == 0 {
		opt.MinSegment = changepoint.DefaultMinSegment
	}
	if len(points) < 2*opt.MinSegment {
		w.cfg.Logf("series %s/%s: %d builds since the baseline, fewer than %d: no search yet", w.device, w.metric, len(points), 2*opt.MinSegment)
		return nil, nil
	}
	vals := make([]float64, len(points))
	for i, p := range points {
		vals[i] = float64(p.Median)
	}
	steps, err := changepoint.Detect(vals, opt)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, a := range alerts {
		known[a.Rev], known[a.FirstBad] = true, true
	}
	delete(known, "")
	var raised []history.Alert
	for _, st := range steps {
		lo, hi := max(0, st.Index-1-Window), min(len(points)-1, st.Index+Window)
		for lo < st.Index && points[lo].Rev == "" { // an explicit reference has no commit
			lo++
		}
		seen := false
		for _, p := range points[lo : hi+1] {
			seen = seen || known[p.Rev]
		}
		step := points[st.Index]
		if seen {
			continue
		}
		w.cfg.Logf("step in %s/%s at %s: %s (p %s); confirming %s → %s", w.device, w.metric, step.Build,
			format.SignedPct(st.DeltaPct), analysis.FormatP(st.P, opt.Alpha, 3), points[lo].Build, points[hi].Build)
		a, err := w.confirm(ctx, points[lo].Rev, points[hi].Rev, st, start+st.Index, step.Rev)
		if err != nil {
			return raised, err
		}
		known[a.Rev] = true
		if a.FirstBad != "" {
			known[a.FirstBad] = true
		}
		raised = append(raised, a)
	}
	return raised, nil
}

// confirm re-measures a step: a bisect over the commits from to to,
// whose first comparison (the two ends, a fresh paired A/B under the
// verdict rules) confirms it, and which on a regression goes on to name
// the first bad commit. The alert is recorded either way.
func (w *Watcher) confirm(ctx context.Context, from, to string, st changepoint.Step, index int, rev string) (history.Alert, error) {
	g := *w.git
	g.Good, g.Bad = from, to
	cands, err := g.Candidates(ctx)
	if err != nil {
		return history.Alert{}, err
	}
	byRev := map[string]Commit{}
	for _, c := range cands {
		cm, err := w.commit(ctx, c.Rev)
		if err != nil {
			return history.Alert{}, err
		}
		byRev[c.Rev] = cm
	}
	tmpl := w.exp
	tmpl.Builds = nil
	tmpl.Seed = w.exp.Seed + 1_000_003 + int64(index)*7919 // fresh noise, not the watch's
	cfg := bisect.Config{Candidates: cands, Template: tmpl, MaxTrials: w.cfg.MaxTrials, Attempts: w.cfg.Attempts,
		Tool: w.cfg.Tool, Dir: w.cfg.Dir, Source: "watch confirmation",
		Resolve: func(ctx context.Context, c bisect.Candidate) (lab.Build, error) { return w.build(ctx, byRev[c.Rev]) }}
	rec, err := bisect.Run(ctx, w.cfg.Lab, cfg, func(ev bisect.Event) {
		if ev.Kind == bisect.KindDone {
			c := ev.Comparison
			w.cfg.Logf("  %s %s → %s: %s, Δ %s [%s, %s], %d trials", c.Purpose, cands[c.A].Name, cands[c.B].Name, c.Verdict,
				format.SignedPct(c.DeltaPct), format.SignedPct(c.CILowPct), format.SignedPct(c.CIHighPct), c.Trials)
		}
	})
	if err != nil {
		return history.Alert{}, fmt.Errorf("confirming the step at %s: %w", rev, err)
	}
	path := filepath.Join(w.cfg.Dir, fmt.Sprintf("watch-bisect-%s-%s.json", byRev[rev].Short, time.Now().Format("20060102-150405")))
	if err := rec.Save(path); err != nil {
		return history.Alert{}, err
	}
	ends := rec.Comparisons[0]
	a := history.Alert{Device: w.device, Metric: w.metric, Rev: rev, Index: index, From: from, To: to,
		Verdict: ends.Verdict, DetectedPct: st.DeltaPct, P: analysis.Float(st.P),
		DeltaPct: ends.DeltaPct, CILowPct: ends.CILowPct, CIHighPct: ends.CIHighPct, Sessions: ends.Sessions, Bisect: path}
	a.Confirmed = history.Confirms(a.Verdict, a.DeltaPct, a.DetectedPct)
	if rec.FirstBad != nil {
		a.FirstBad = rec.FirstBad.Rev
		// Who the alert reaches: the first bad commit's author.
		if out, err := w.gitOut(ctx, "log", "-1", "--format=%an%x00%ae%x00%s", "--end-of-options", a.FirstBad); err == nil {
			if f := strings.SplitN(out, "\x00", 3); len(f) == 3 {
				a.Author = &history.Author{Name: f[0], Email: f[1], Subject: f[2]}
			}
		}
	}
	a, err = w.cfg.History.AddAlert(ctx, a)
	if err != nil {
		return a, err
	}
	what := "not confirmed (" + a.Verdict + ")"
	if !a.Confirmed && history.Confirms(a.Verdict, -a.DeltaPct, a.DetectedPct) {
		what = "not confirmed (" + a.Verdict + ", the other way than the detected step)"
	}
	if a.Confirmed {
		what = "confirmed " + a.Verdict
	}
	fb := ""
	if a.FirstBad != "" {
		fb = ", first bad " + byRev[a.FirstBad].Name()
		if a.Author != nil {
			fb += " by " + a.Author.Name + " <" + a.Author.Email + ">"
		}
	}
	w.cfg.Logf("alert %d: %s/%s at %s: %s, Δ %s [%s, %s]%s; bisect %s", a.ID, a.Device, a.Metric, byRev[rev].Name(), what,
		format.SignedPct(a.DeltaPct), format.SignedPct(a.CILowPct), format.SignedPct(a.CIHighPct), fb, path)
	return a, nil
}
