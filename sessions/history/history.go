// Package history keeps results across experiments in an SQLite file: one
// row per device, build and metric of every imported session (run, suite
// or bisect) or CSV file, so that a metric's series over commits can be
// searched for change points (analysis/changepoint). Several perflab
// processes may use one file at once: it is in WAL mode, waits for a
// writer's lock (busy timeout) and writes each import in one transaction,
// so a killed writer leaves the file as it was before that import.
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/perflab/perflab/sessions/engine"
)

// ApplicationID marks a perflab history in the SQLite header
// (PRAGMA application_id), "pflh", so that another program's database is
// refused rather than written into.
const ApplicationID = 0x70666c68

// BusyTimeoutMS is how long a connection waits for another process's
// write lock before failing.
const BusyTimeoutMS = 30000

// DB is an open history file.
type DB struct {
	db   store
	path string // the file, or the server's URL without its password
	// claims are the connections holding a watch's claims (Claim), closed
	// with the DB: a watch that ends frees what it held.
	mu     sync.Mutex
	claims map[*sql.Conn]bool
}

// DefaultPath is the history file unless told: history.db beside the
// sessions folder, $XDG_DATA_HOME/perflab/history.db (engine.DefaultDir).
func DefaultPath() (string, error) {
	dir, err := engine.DefaultDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(dir), "history.db"), nil
}

// Path is the file the DB was opened from.
func (d *DB) Path() string { return d.path }

// Open opens the history at path, creating it (and its folder) when it
// does not exist and bringing an older schema up to date. A file that is
// not a perflab history (not SQLite, another program's database, a newer
// schema) is refused with its path named and left untouched.
func Open(ctx context.Context, path string) (*DB, error) {
	if IsURL(path) {
		return openPG(ctx, path, true)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	// Checking and creating (or migrating) the file is one step for all
	// processes: another perflab creating the history at this moment has
	// a database without its schema yet, which the check would take for
	// another program's.
	// A file that is plainly not a database is refused before its lock
	// file is made beside it.
	if err := checkMagic(path); err != nil {
		return nil, err
	}
	unlock, created, err := lockOpen(path)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	defer unlock()
	if err := checkForeign(ctx, path); err != nil {
		if created {
			// Every perflab refuses this file: nobody needs the lock.
			os.Remove(path + ".lock")
		}
		return nil, err
	}
	db, err := sql.Open(DriverName, dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	d := &DB{db: store{db, false}, path: path}
	if err := d.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	return d, nil
}

// OpenExisting opens a history that exists, as a command that only
// reads it does: a file that does not exist, or a server database with no
// history yet, is an error and nothing is created.
func OpenExisting(ctx context.Context, path string) (*DB, error) {
	if IsURL(path) {
		return openPG(ctx, path, false)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no history at %s (perflab history import adds sessions to it)", path)
	}
	return Open(ctx, path)
}

// lockOpen takes the exclusive lock of path's opening (an flock on
// PATH.lock beside it, which the kernel releases if perflab dies) and
// returns its release; created is true when this call made the lock file.
func lockOpen(path string) (unlock func(), created bool, err error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	created = err == nil
	if errors.Is(err, os.ErrExist) {
		f, err = os.OpenFile(path+".lock", os.O_RDWR, 0o644)
	}
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, false, err
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, created, nil
}

// checkMagic refuses an existing file at path that does not start as an
// SQLite database does. A file shorter than the magic is let through: it
// may be a history another perflab is creating at this moment, which
// checkForeign, under the lock, sees whole.
func checkMagic(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // missing (created under the lock) or unreadable (said there)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if n, _ := io.ReadFull(f, head); n == len(head) && string(head) != sqliteMagic {
		return notSQLite(path)
	}
	return nil
}

func notSQLite(path string) error {
	return fmt.Errorf("history %s: not a perflab history (not an SQLite database); left untouched", path)
}

// Close closes the file.
func (d *DB) Close() error {
	d.mu.Lock()
	for c := range d.claims {
		c.Close()
	}
	d.claims = nil
	d.mu.Unlock()
	return d.db.Close()
}

// dsn is the driver's name for path: WAL, a busy timeout, foreign keys,
// and write transactions that take the write lock when they begin (so two
// writers queue instead of failing when both try to upgrade a read lock).
func dsn(path string, readOnly bool) string {
	u := (&url.URL{Path: path}).EscapedPath()
	if readOnly {
		return fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)", u, BusyTimeoutMS)
	}
	return fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(wal)&_pragma=foreign_keys(1)&_pragma=synchronous(normal)&_txlock=immediate", u, BusyTimeoutMS)
}

// sqliteMagic starts every SQLite 3 database file.
const sqliteMagic = "SQLite format 3\x00"

// checkForeign refuses an existing file at path that is not a perflab
// history, reading it only (a corrupt or foreign file is never rewritten,
// not even to switch it to WAL mode).
func checkForeign(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	f.Close()
	if n == 0 && (err == io.EOF || err == nil) {
		// Under the lock, an empty file is no history being created: it
		// was made by someone else (touch, a shell redirection, a typo).
		return fmt.Errorf("history %s: an empty file, not a perflab history; left untouched (remove it, or name a file that does not exist to start a new history)", path)
	}
	if string(head[:n]) != sqliteMagic {
		return notSQLite(path)
	}
	db, err := sql.Open(DriverName, dsn(path, true))
	if err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	defer db.Close()
	var app, version, tables int
	err = db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app)
	if err == nil {
		err = db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version)
	}
	if err == nil {
		err = db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables)
	}
	switch {
	case err != nil:
		return fmt.Errorf("history %s: unreadable (%v); left untouched", path, err)
	case app == 0 && tables == 0:
		return nil // an empty database
	case app != ApplicationID:
		return fmt.Errorf("history %s: an SQLite database of another program (application_id %#x), not a perflab history; left untouched", path, app)
	case version > len(migrations):
		return fmt.Errorf("history %s: schema version %d is newer than this perflab's (%d); use a newer perflab", path, version, len(migrations))
	}
	return nil
}
