package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/perflab/perflab/analysis"
)

// Alert is a step the detector found in a series and perflab watch
// re-measured: Confirmed when a fresh paired A/B of the commits on either
// side of the step's window (From, To) gave a regression or an
// improvement in the direction of the detected step (Confirms); FirstBad when the bisect that followed named a commit.
// Unconfirmed alerts are kept too, so that a step is re-measured once.
type Alert struct {
	ID     int64  `json:"id"`
	Series string `json:"series"` // device/metric
	Device string `json:"device"`
	Metric string `json:"metric"`
	// Rev is the first commit of the new level as the detector placed it,
	// Index its place in the series searched.
	Rev   string `json:"commit"`
	Index int    `json:"index"`
	// From and To are the confirmation's two ends.
	From     string `json:"from"`
	To       string `json:"to"`
	FirstBad string `json:"first_bad,omitempty"`
	// Confirmed is true when Verdict is regression or improvement and
	// the A/B moved the way the detected step did (Confirms).
	Confirmed bool   `json:"confirmed"`
	Verdict   string `json:"verdict"`
	// DetectedPct and P are the detector's step (after against before,
	// segments' trimmed means) and its p (changepoint.Step.P; alerts
	// recorded before 2026-11-29 hold a Welch p and means).
	DetectedPct analysis.Float `json:"detected_pct"`
	P           analysis.Float `json:"p"`
	// DeltaPct, CILowPct and CIHighPct are the confirmation's paired Δ%
	// of To against From and its interval.
	DeltaPct  analysis.Float `json:"delta_pct"`
	CILowPct  analysis.Float `json:"ci_low_pct"`
	CIHighPct analysis.Float `json:"ci_high_pct"`
	// Sessions are the confirmation's session files; Bisect the bisect
	// record that holds them and the search's.
	Sessions []string `json:"sessions"`
	Bisect   string   `json:"bisect,omitempty"`
	Created  string   `json:"created"`
	// Author is the first bad commit's author and subject (from git),
	// for a CI job to mention or assign; nil without a first bad commit.
	Author *Author `json:"author,omitempty"`
	// Mark is a person's latest verdict on the alert, nil when unmarked.
	Mark *Mark `json:"mark"`
}

// Regression reports whether the alert is a confirmed regression.
func (a Alert) Regression() bool {
	return a.Confirmed && a.Verdict == analysis.VerdictRegression
}

// Author is who wrote a commit, and what it says.
type Author struct {
	Name    string `json:"name"`
	Email   string `json:"email"`
	Subject string `json:"subject"`
}

// Mark says whether an alert was a real step or a false alarm.
type Mark struct {
	Real    bool   `json:"real"`
	Note    string `json:"note,omitempty"`
	Created string `json:"created"`
}

// AddAlert records a and returns it with its ID and creation time.
func (d *DB) AddAlert(ctx context.Context, a Alert) (Alert, error) {
	if a.Created == "" {
		a.Created = time.Now().UTC().Format(time.RFC3339)
	}
	if a.Sessions == nil {
		a.Sessions = []string{}
	}
	sess, _ := json.Marshal(a.Sessions)
	var au Author
	if a.Author != nil {
		au = *a.Author
	}
	err := d.db.QueryRowContext(ctx, `INSERT INTO alerts (device, metric, rev, first_bad, confirmed, delta_pct, ci_low_pct, ci_high_pct,
		sessions, created, step_index, from_rev, to_rev, verdict, detected_pct, p, bisect, author_name, author_email, subject)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		a.Device, a.Metric, a.Rev, a.FirstBad, a.Confirmed, nullable(a.DeltaPct), nullable(a.CILowPct), nullable(a.CIHighPct),
		string(sess), a.Created, a.Index, a.From, a.To, a.Verdict, nullable(a.DetectedPct), nullable(a.P), a.Bisect,
		au.Name, au.Email, au.Subject).Scan(&a.ID)
	if err != nil {
		return a, fmt.Errorf("history %s: %w", d.path, err)
	}
	a.Series = a.Device + "/" + a.Metric
	return a, nil
}

// Alerts returns every alert, oldest first, each with its latest mark.
func (d *DB) Alerts(ctx context.Context) ([]Alert, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT a.id, a.device, a.metric, a.rev, a.first_bad, a.confirmed, a.delta_pct, a.ci_low_pct,
		a.ci_high_pct, a.sessions, a.created, a.step_index, a.from_rev, a.to_rev, a.verdict, a.detected_pct, a.p, a.bisect,
		a.author_name, a.author_email, a.subject, m.real, m.note, m.created
		FROM alerts a LEFT JOIN marks m ON m.id = (SELECT max(id) FROM marks WHERE alert_id = a.id)
		ORDER BY a.id`)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", d.path, err)
	}
	defer rows.Close()
	var out []Alert
	for rows.Next() {
		var a Alert
		var dp, lo, hi, det, p sql.NullFloat64
		var sess string
		var real sql.NullBool
		var note, mcreated sql.NullString
		var au Author
		if err := rows.Scan(&a.ID, &a.Device, &a.Metric, &a.Rev, &a.FirstBad, &a.Confirmed, &dp, &lo, &hi, &sess, &a.Created,
			&a.Index, &a.From, &a.To, &a.Verdict, &det, &p, &a.Bisect, &au.Name, &au.Email, &au.Subject, &real, &note, &mcreated); err != nil {
			return nil, fmt.Errorf("history %s: %w", d.path, err)
		}
		a.Series = a.Device + "/" + a.Metric
		if au != (Author{}) {
			a.Author = &au
		}
		a.DeltaPct, a.CILowPct, a.CIHighPct, a.DetectedPct, a.P = float(dp), float(lo), float(hi), float(det), float(p)
		if err := json.Unmarshal([]byte(sess), &a.Sessions); err != nil || a.Sessions == nil {
			a.Sessions = []string{}
		}
		if real.Valid {
			a.Mark = &Mark{Real: real.Bool, Note: note.String, Created: mcreated.String}
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ErrNoAlert is MarkAlert's error for an id the history does not hold.
var ErrNoAlert = errors.New("no alert")

// MarkAlert records a person's verdict on alert id: real (a step that is
// there) or a false alarm. A later mark replaces an earlier one.
func (d *DB) MarkAlert(ctx context.Context, id int64, real bool, note string) error {
	var n int
	if err := d.db.QueryRowContext(ctx, "SELECT count(*) FROM alerts WHERE id = ?", id).Scan(&n); err != nil {
		return fmt.Errorf("history %s: %w", d.path, err)
	}
	if n == 0 {
		return fmt.Errorf("history %s: %w %d (perflab history alerts lists them)", d.path, ErrNoAlert, id)
	}
	_, err := d.db.ExecContext(ctx, "INSERT INTO marks (alert_id, real, note, created) VALUES (?, ?, ?, ?)",
		id, real, note, time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("history %s: %w", d.path, err)
	}
	return nil
}

// Precision is the share of marked alerts marked real: how often an alert
// was a step a person agreed with. Confirmed alerts and all alerts are
// counted apart, so that the confirmation's worth shows.
type Precision struct {
	// Marked and Real count the marked alerts and those marked real.
	Marked, Real int
	// ConfirmedMarked and ConfirmedReal count the confirmed ones.
	ConfirmedMarked, ConfirmedReal int
}

// Of is real/marked, NaN when nothing is marked.
func (p Precision) Of(real, marked int) analysis.Float {
	if marked == 0 {
		return analysis.Float(math.NaN())
	}
	return analysis.Float(float64(real) / float64(marked))
}

// PrecisionOf counts the marks of alerts.
func PrecisionOf(alerts []Alert) Precision {
	var p Precision
	for _, a := range alerts {
		if a.Mark == nil {
			continue
		}
		p.Marked++
		if a.Mark.Real {
			p.Real++
		}
		if a.Confirmed {
			p.ConfirmedMarked++
			if a.Mark.Real {
				p.ConfirmedReal++
			}
		}
	}
	return p
}

// Confirms reports whether a confirmation A/B with verdict and estimate
// abPct confirms a detected step of detectedPct: the verdict says the
// metric changed (analysis decides; nothing here does) and it changed the
// same way the detector saw. A step up that the A/B finds to be a change
// down is a different change, not this one.
func Confirms(verdict string, abPct, detectedPct analysis.Float) bool {
	if verdict != analysis.VerdictRegression && verdict != analysis.VerdictImprovement {
		return false
	}
	return abPct.Defined() && detectedPct.Defined() && (abPct > 0) == (detectedPct > 0)
}
