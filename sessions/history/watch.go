package history

import (
	"context"
	"database/sql"
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

// Claim takes the right to measure (device, rev) for a watch, so that two
// watches on different hosts writing to one server never measure the same
// commit on the same device twice: on PostgreSQL a session advisory lock
// held on a connection of its own, which the server releases when the
// holder dies (its connection ends); on an SQLite file, which one host
// holds, the watch's device lock already does it and Claim always
// succeeds. ok is false when another watch holds it; release gives it up.
func (d *DB) Claim(ctx context.Context, device, rev string) (release func(), ok bool, err error) {
	if !d.db.pg {
		return func() {}, true, nil
	}
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("history %s: %w", d.path, err)
	}
	key := "perflab watch\x1f" + device + "\x1f" + rev // PostgreSQL text holds no NUL
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key).Scan(&ok); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("history %s: %w", d.path, err)
	}
	if !ok {
		conn.Close()
		return nil, false, nil
	}
	d.mu.Lock()
	if d.claims == nil {
		d.claims = map[*sql.Conn]bool{}
	}
	d.claims[conn] = true
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		held := d.claims[conn]
		delete(d.claims, conn)
		d.mu.Unlock()
		if held {
			conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(hashtextextended($1, 0))", key)
			conn.Close()
		}
	}, true, nil
}
