package history

import (
	"context"
	"database/sql"
	"fmt"
	"math"

	"github.com/perflab/perflab/analysis"
)

// Results returns every row, by device, metric and series order.
func (d *DB) Results(ctx context.Context) ([]Result, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT r.key, r.kind, x.device, x.build, x.rev, x.rev_time, x.control, x.metric, x.unit,
		x.n, x.median, x.delta_pct, x.ci_low_pct, x.ci_high_pct, x.verdict, x.session, x.seq, x.ord_time
		FROM results x JOIN runs r ON r.id = x.run_id
		ORDER BY x.device, x.metric, x.ord_time, x.seq, r.created, x.id`)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", d.path, err)
	}
	defer rows.Close()
	var out []Result
	for rows.Next() {
		var x Result
		var med, dp, lo, hi sql.NullFloat64
		if err := rows.Scan(&x.Run, &x.Kind, &x.Device, &x.Build, &x.Rev, &x.RevTime, &x.Control, &x.Metric, &x.Unit,
			&x.N, &med, &dp, &lo, &hi, &x.Verdict, &x.Session, &x.Seq, &x.OrdTime); err != nil {
			return nil, fmt.Errorf("history %s: %w", d.path, err)
		}
		x.Median, x.DeltaPct, x.CILowPct, x.CIHighPct = float(med), float(dp), float(lo), float(hi)
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", d.path, err)
	}
	return out, nil
}

func float(v sql.NullFloat64) analysis.Float {
	if !v.Valid {
		return analysis.Float(math.NaN())
	}
	return analysis.Float(v.Float64)
}

// Series is one metric on one device over builds, in order: the values
// change points are looked for in.
type Series struct {
	Device, Metric, Unit string
	// Points are the builds in order, each once: the row of its latest
	// run (a build measured again, as a control is, appears where it was
	// first measured).
	Points []Result
}

// Values are the series' medians.
func (s Series) Values() []float64 {
	v := make([]float64, len(s.Points))
	for i, p := range s.Points {
		v[i] = float64(p.Median)
	}
	return v
}

// AllSeries groups the rows (Results) into series by device and metric,
// each build once, skipping rows without a median.
func AllSeries(rows []Result) []Series {
	var out []Series
	index := map[[2]string]int{}
	at := map[[2]string]map[string]int{} // build identity → point index
	for _, x := range rows {
		if !x.Median.Defined() {
			continue
		}
		k := [2]string{x.Device, x.Metric}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, Series{Device: x.Device, Metric: x.Metric, Unit: x.Unit})
			at[k] = map[string]int{}
		}
		id := x.Build + "\x00" + x.Rev
		if j, ok := at[k][id]; ok {
			out[i].Points[j] = x
			continue
		}
		at[k][id] = len(out[i].Points)
		out[i].Points = append(out[i].Points, x)
	}
	return out
}
