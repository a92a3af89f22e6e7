package history

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
)

// Imported says what one import added.
type Imported struct {
	File string
	// Runs and Rows count what was added; Known counts runs already in
	// the history, which add nothing.
	Runs, Rows, Known int
}

// run is one run to record with its rows.
type run struct {
	key, kind, source, created string
	rows                       []Result
}

// ImportFile adds a session file (of perflab run or suite) or a bisect
// record with its sessions. A run already in the history (same session
// id) adds nothing, so importing twice is harmless. Everything of one file
// is written in one transaction: nothing is half-imported.
func (d *DB) ImportFile(ctx context.Context, path string) (Imported, error) {
	var runs []run
	var err error
	if bisect.IsRecord(path) {
		runs, err = bisectRuns(path)
	} else {
		var r run
		r, err = sessionRun(path, "", nil)
		runs = []run{r}
	}
	if err != nil {
		return Imported{File: path}, err
	}
	return d.insert(ctx, path, runs)
}

// sessionRun loads a session and makes its rows; kind "" takes the
// session's own (run or suite).
func sessionRun(path, kind string, revs map[string]Rev) (run, error) {
	s, err := sessions.Load(path)
	if err != nil {
		return run{}, err
	}
	if abs, err := filepath.Abs(path); err == nil {
		s.Path = abs
	}
	if kind == "" {
		kind = sessionKind(s)
	}
	if revs == nil {
		revs = suiteRevs(s)
	}
	rows, err := SessionRows(s, kind, revs)
	if err != nil {
		return run{}, fmt.Errorf("%s: %w", path, err)
	}
	return run{key: "session:" + s.Header.ID, kind: kind, source: s.Path,
		created: s.Header.Created.UTC().Format(time.RFC3339Nano), rows: rows}, nil
}

// bisectRuns imports every session of a bisect record, each build with
// its commit and its place in the range (a session file named relative
// is looked for beside the record too).
func bisectRuns(path string) ([]run, error) {
	rec, err := bisect.Load(path)
	if err != nil {
		return nil, err
	}
	var runs []run
	first := ""
	for _, c := range rec.Comparisons {
		if c.A < 0 || c.B < 0 || c.A >= len(rec.Candidates) || c.B >= len(rec.Candidates) {
			return nil, fmt.Errorf("%s: comparison of builds %d and %d, the range has %d", path, c.A, c.B, len(rec.Candidates))
		}
		ca, cb := rec.Candidates[c.A], rec.Candidates[c.B]
		revs := map[string]Rev{
			lab.ArmControl:   {Rev: ca.Rev, Seq: c.A, Name: ca.Name},
			lab.ArmTreatment: {Rev: cb.Rev, Seq: c.B, Name: cb.Name},
		}
		for _, sp := range c.Sessions {
			if _, err := os.Stat(sp); err != nil && !filepath.IsAbs(sp) {
				sp = filepath.Join(filepath.Dir(path), sp)
			}
			r, err := sessionRun(sp, "bisect", revs)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			// One bisect is one range: its builds are ordered by their
			// place in it, not by when each session ran.
			if first == "" || r.created < first {
				first = r.created
			}
			runs = append(runs, r)
		}
	}
	for i := range runs {
		for j := range runs[i].rows {
			if runs[i].rows[j].RevTime == "" {
				runs[i].rows[j].OrdTime = first
			}
		}
	}
	return runs, nil
}

// insertBatch is the rows of one INSERT: 100 × 17 values stay within
// both SQLite's and PostgreSQL's limits on a statement's parameters.
const insertBatch = 100

// insert writes runs in one transaction, skipping those already known.
func (d *DB) insert(ctx context.Context, file string, runs []run) (Imported, error) {
	im := Imported{File: file}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return im, fmt.Errorf("history %s: %w", d.path, err)
	}
	defer tx.Rollback()
	now := time.Now().UTC().Format(time.RFC3339)
	for _, r := range runs {
		var id int64
		err := tx.QueryRowContext(ctx, "SELECT id FROM runs WHERE key = ?", r.key).Scan(&id)
		if err == nil {
			im.Known++
			continue
		}
		if err != sql.ErrNoRows {
			return im, fmt.Errorf("history %s: %w", d.path, err)
		}
		err = tx.QueryRowContext(ctx, "INSERT INTO runs (key, kind, source, created, imported) VALUES (?, ?, ?, ?, ?) RETURNING id",
			r.key, r.kind, r.source, r.created, now).Scan(&id)
		if err != nil {
			return im, fmt.Errorf("history %s: %w", d.path, err)
		}
		// Rows go in batches of insertBatch, one statement each: a server's
		// round trip per row made a 30,000-row import take 16 s.
		for start := 0; start < len(r.rows); start += insertBatch {
			batch := r.rows[start:min(start+insertBatch, len(r.rows))]
			args := make([]any, 0, len(batch)*17)
			for _, x := range batch {
				args = append(args, id, x.Device, x.Build, x.Rev, x.RevTime, x.Control, x.Metric, x.Unit,
					x.N, nullable(x.Median), nullable(x.DeltaPct), nullable(x.CILowPct), nullable(x.CIHighPct),
					x.Verdict, x.Session, x.Seq, x.OrdTime)
			}
			q := `INSERT INTO results (run_id, device, build, rev, rev_time, control, metric, unit,
				n, median, delta_pct, ci_low_pct, ci_high_pct, verdict, session, seq, ord_time) VALUES ` +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", len(batch)), ", ")
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				x := batch[0]
				return im, fmt.Errorf("history %s: %s, %s, %s and %d more rows: %w", d.path, x.Device, x.Build, x.Metric, len(batch)-1, err)
			}
			im.Rows += len(batch)
		}
		im.Runs++
	}
	if err := tx.Commit(); err != nil {
		return im, fmt.Errorf("history %s: %w", d.path, err)
	}
	return im, nil
}

// nullable stores an undefined value as NULL.
func nullable(f analysis.Float) any {
	if !f.Defined() || math.IsInf(float64(f), 0) {
		return nil
	}
	return float64(f)
}
