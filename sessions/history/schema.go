package history

import (
	"context"
	"fmt"
)

// migrations[i] brings the schema from version i to i+1 (PRAGMA
// user_version). A change of schema is a new entry at the end, never an
// edit of one that has shipped.
var migrations = []string{
	// 1: runs, results, alerts, marks.
	`
CREATE TABLE runs (
	id       INTEGER PRIMARY KEY,
	key      TEXT NOT NULL UNIQUE, -- "session:" + header id, or "csv:" + SHA-256 of the file
	kind     TEXT NOT NULL,        -- run, suite, bisect or csv
	source   TEXT NOT NULL,        -- the file imported
	created  TEXT NOT NULL,        -- when the run was made (RFC 3339), '' for CSV
	imported TEXT NOT NULL         -- when it was imported (RFC 3339)
);
CREATE TABLE results (
	id          INTEGER PRIMARY KEY,
	run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	device      TEXT NOT NULL,             -- device model, or the host for local
	build       TEXT NOT NULL,             -- build name, or the commit
	rev         TEXT NOT NULL DEFAULT '',  -- commit, when known
	rev_time    TEXT NOT NULL DEFAULT '',  -- commit (or CSV row) time, RFC 3339, when known
	control     TEXT NOT NULL DEFAULT '',  -- the experiment's control build ('' on the control's own row)
	metric      TEXT NOT NULL,
	unit        TEXT NOT NULL DEFAULT '',
	n           INTEGER NOT NULL,
	median      REAL,
	delta_pct   REAL,                      -- paired Δ% against the control, NULL on the control's row
	ci_low_pct  REAL,
	ci_high_pct REAL,
	verdict     TEXT NOT NULL DEFAULT '',
	session     TEXT NOT NULL DEFAULT '',  -- the session file
	seq         INTEGER NOT NULL,          -- order within the run (arm, bisect candidate or CSV line)
	ord_time    TEXT NOT NULL,             -- series order: rev_time, else the run's time
	UNIQUE (run_id, seq, metric)
);
CREATE INDEX results_series ON results (device, metric, ord_time, seq);
CREATE TABLE alerts (
	id          INTEGER PRIMARY KEY,
	device      TEXT NOT NULL,
	metric      TEXT NOT NULL,
	rev         TEXT NOT NULL,             -- first commit after the step
	first_bad   TEXT NOT NULL DEFAULT '',  -- named by a bisect
	confirmed   INTEGER NOT NULL DEFAULT 0,
	delta_pct   REAL,
	ci_low_pct  REAL,
	ci_high_pct REAL,
	sessions    TEXT NOT NULL DEFAULT '',  -- JSON list of session files
	created     TEXT NOT NULL
);
CREATE TABLE marks (
	id       INTEGER PRIMARY KEY,
	alert_id INTEGER NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
	real     INTEGER NOT NULL,             -- 1 a real step, 0 a false alarm
	note     TEXT NOT NULL DEFAULT '',
	created  TEXT NOT NULL
);
`,
	// 2: what perflab watch records of an alert (issue 30): where the
	// detector put the step, the two ends of its confirmation, the verdict,
	// the detector's own Δ and p, the bisect record; and the commits a watch
	// could not build, so that it does not try them again.
	`
ALTER TABLE alerts ADD COLUMN step_index INTEGER NOT NULL DEFAULT -1;
ALTER TABLE alerts ADD COLUMN from_rev TEXT NOT NULL DEFAULT '';   -- the confirmation's A: last commit before the window
ALTER TABLE alerts ADD COLUMN to_rev TEXT NOT NULL DEFAULT '';     -- its B: first commit after the window
ALTER TABLE alerts ADD COLUMN verdict TEXT NOT NULL DEFAULT '';    -- the confirmation's verdict
ALTER TABLE alerts ADD COLUMN detected_pct REAL;                   -- the detector's after/before in %
ALTER TABLE alerts ADD COLUMN p REAL;                              -- the detector's Welch p
ALTER TABLE alerts ADD COLUMN bisect TEXT NOT NULL DEFAULT '';     -- the bisect record file
CREATE INDEX alerts_series ON alerts (device, metric);
CREATE TABLE build_failures (
	id      INTEGER PRIMARY KEY,
	device  TEXT NOT NULL,
	rev     TEXT NOT NULL,
	error   TEXT NOT NULL,
	created TEXT NOT NULL,
	UNIQUE (device, rev)
);
`,
	// 3: who an alert reaches (issue 37): the first bad commit's author
	// and subject, from git.
	alertAuthorMigration,
}

// alertAuthorMigration is version 3 in both stores' words.
const alertAuthorMigration = `
ALTER TABLE alerts ADD COLUMN author_name TEXT NOT NULL DEFAULT '';
ALTER TABLE alerts ADD COLUMN author_email TEXT NOT NULL DEFAULT '';
ALTER TABLE alerts ADD COLUMN subject TEXT NOT NULL DEFAULT '';
`

// SchemaVersion is the version this perflab writes.
func SchemaVersion() int { return len(migrations) }

// migrate brings the schema to SchemaVersion, each step in a transaction
// that also sets user_version, so that a crash leaves a whole version.
func (d *DB) migrate(ctx context.Context) error {
	var v int
	if err := d.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this perflab's (%d); use a newer perflab", v, len(migrations))
	}
	for ; v < len(migrations); v++ {
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		// Another process may have migrated since we looked.
		var now int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&now); err != nil {
			tx.Rollback()
			return err
		}
		if now > v {
			v = now - 1
			tx.Rollback()
			continue
		}
		stmts := migrations[v] + fmt.Sprintf("\nPRAGMA application_id = %d;\nPRAGMA user_version = %d;", ApplicationID, v+1)
		if _, err := tx.ExecContext(ctx, stmts); err != nil {
			tx.Rollback()
			return fmt.Errorf("schema version %d: %w", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}
