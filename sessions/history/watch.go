package history

import (
	"context"
	"fmt"
	"time"
)

// KindWatch is the kind of the runs perflab watch records: one session
// per commit, the commit against the reference build.
const KindWatch = "watch"

// RecordSession adds one session file with its builds' commits (revs, by
// arm) as a run of kind (KindWatch for perflab watch), in one
// transaction. A session already in the history adds nothing.
func (d *DB) RecordSession(ctx context.Context, path, kind string, revs map[string]Rev) (Imported, error) {
	r, err := sessionRun(path, kind, revs)
	if err != nil {
		return Imported{File: path}, err
	}
	return d.insert(ctx, path, []run{r})
}

// DoneRevs returns the commits a watch has finished on device: those with
// a recorded comparison (a row of a watch run against its reference) and
// those that failed to build (RecordBuildFailure). The history is what
// lets a watch resume where it stopped.
func (d *DB) DoneRevs(ctx context.Context, device string) (map[string]bool, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT x.rev FROM results x JOIN runs r ON r.id = x.run_id
		WHERE r.kind = ? AND x.device = ? AND x.control != '' AND x.rev != ''
		UNION SELECT rev FROM build_failures WHERE device = ?`, KindWatch, device, device)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", d.path, err)
	}
	defer rows.Close()
	done := map[string]bool{}
	for rows.Next() {
		var rev string
		if err := rows.Scan(&rev); err != nil {
			return nil, fmt.Errorf("history %s: %w", d.path, err)
		}
		done[rev] = true
	}
	return done, rows.Err()
}

// RecordBuildFailure notes that rev did not build for device, so that a
// watch skips it from then on (its error is kept).
func (d *DB) RecordBuildFailure(ctx context.Context, device, rev, msg string) error {
	_, err := d.db.ExecContext(ctx, `INSERT INTO build_failures (device, rev, error, created) VALUES (?, ?, ?, ?)
		ON CONFLICT (device, rev) DO UPDATE SET error = excluded.error`,
		device, rev, msg, time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("history %s: %w", d.path, err)
	}
	return nil
}
