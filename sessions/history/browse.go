package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The queries of a browser over the history (perflab serve): each reads
// one series, or one count per series, through the series index
// (results_series), so that a page costs what its series holds, not the
// whole history.

// SeriesKey names a series.
type SeriesKey struct {
	Device, Metric, Unit string
}

// SeriesKeys lists every series, by device and metric. It seeks from one
// series to the next through the series index (a skip scan in a few
// queries a series), so it costs the number of series, not of rows.
func (d *DB) SeriesKeys(ctx context.Context) ([]SeriesKey, error) {
	var out []SeriesKey
	fail := func(err error) ([]SeriesKey, error) { return nil, fmt.Errorf("history %s: %w", d.path, err) }
	device, first := "", true
	for {
		var next string
		q := "SELECT device FROM results WHERE device > ? ORDER BY device LIMIT 1"
		if first {
			q = "SELECT device FROM results WHERE device >= ? ORDER BY device LIMIT 1"
		}
		err := d.db.QueryRowContext(ctx, q, device).Scan(&next)
		if errors.Is(err, sql.ErrNoRows) {
			return out, nil
		}
		if err != nil {
			return fail(err)
		}
		device, first = next, false
		metric, firstMetric := "", true
		for {
			var k SeriesKey
			q := "SELECT metric, unit FROM results WHERE device = ? AND metric > ? ORDER BY device, metric LIMIT 1"
			if firstMetric {
				q = "SELECT metric, unit FROM results WHERE device = ? AND metric >= ? ORDER BY device, metric LIMIT 1"
			}
			err := d.db.QueryRowContext(ctx, q, device, metric).Scan(&k.Metric, &k.Unit)
			if errors.Is(err, sql.ErrNoRows) {
				break
			}
			if err != nil {
				return fail(err)
			}
			k.Device, metric, firstMetric = device, k.Metric, false
			out = append(out, k)
		}
	}
}

// SeriesOf returns one series (as AllSeries groups it), or ok false when
// the history has no such series.
func (d *DB) SeriesOf(ctx context.Context, device, metric string) (s Series, ok bool, err error) {
	rows, err := d.db.QueryContext(ctx, `SELECT r.key, r.kind, x.device, x.build, x.rev, x.rev_time, x.control, x.metric, x.unit,
		x.n, x.median, x.delta_pct, x.ci_low_pct, x.ci_high_pct, x.verdict, x.session, x.seq, x.ord_time
		FROM results x JOIN runs r ON r.id = x.run_id
		WHERE x.device = ? AND x.metric = ?
		ORDER BY x.ord_time, x.seq, r.created, x.id`, device, metric)
	if err != nil {
		return Series{}, false, fmt.Errorf("history %s: %w", d.path, err)
	}
	defer rows.Close()
	var list []Result
	for rows.Next() {
		var x Result
		var med, dp, lo, hi sql.NullFloat64
		if err := rows.Scan(&x.Run, &x.Kind, &x.Device, &x.Build, &x.Rev, &x.RevTime, &x.Control, &x.Metric, &x.Unit,
			&x.N, &med, &dp, &lo, &hi, &x.Verdict, &x.Session, &x.Seq, &x.OrdTime); err != nil {
			return Series{}, false, fmt.Errorf("history %s: %w", d.path, err)
		}
		x.Median, x.DeltaPct, x.CILowPct, x.CIHighPct = float(med), float(dp), float(lo), float(hi)
		list = append(list, x)
	}
	if err := rows.Err(); err != nil {
		return Series{}, false, fmt.Errorf("history %s: %w", d.path, err)
	}
	all := AllSeries(list)
	if len(all) == 0 {
		return Series{}, false, nil
	}
	return all[0], true, nil
}

// Tail returns the medians of a series' last n rows, oldest first (a
// small chart's points; a build measured again counts again).
func (d *DB) Tail(ctx context.Context, device, metric string, n int) ([]float64, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT median FROM results
		WHERE device = ? AND metric = ? AND median IS NOT NULL
		ORDER BY ord_time DESC, seq DESC LIMIT ?`, device, metric, n)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", d.path, err)
	}
	defer rows.Close()
	var out []float64
	for rows.Next() {
		var v float64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("history %s: %w", d.path, err)
		}
		out = append(out, v)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, rows.Err()
}

// Knows reports whether the history names file: a session of its rows,
// or a confirmation session or bisect record of an alert. A browser opens
// only such files.
func (d *DB) Knows(ctx context.Context, file string) (bool, error) {
	var n int
	each := "json_each(alerts.sessions)"
	if d.db.pg {
		each = "jsonb_array_elements_text(CASE WHEN alerts.sessions = '' THEN '[]' ELSE alerts.sessions END::jsonb) AS e(value)"
	}
	err := d.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM results WHERE session = ?) +
		(SELECT count(*) FROM alerts WHERE bisect = ? OR EXISTS (SELECT 1 FROM `+each+` WHERE value = ?))`,
		file, file, file).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("history %s: %w", d.path, err)
	}
	return n > 0, nil
}
