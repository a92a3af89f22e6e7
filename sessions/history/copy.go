package history

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// copyTables are the history's tables in the order a copy writes them
// (referenced before referencing), each column with its kind: i an
// integer, t text, f a nullable real, b a flag (an integer in SQLite, a
// boolean in PostgreSQL).
var copyTables = []struct {
	name string
	cols []string
	kind string
}{
	{"runs", []string{"id", "key", "kind", "source", "created", "imported"}, "itttt" + "t"},
	{"results", []string{"id", "run_id", "device", "build", "rev", "rev_time", "control", "metric", "unit", "n", "median",
		"delta_pct", "ci_low_pct", "ci_high_pct", "verdict", "session", "seq", "ord_time"}, "iitttttttiffffttit"},
	{"alerts", []string{"id", "device", "metric", "rev", "first_bad", "confirmed", "delta_pct", "ci_low_pct", "ci_high_pct",
		"sessions", "created", "step_index", "from_rev", "to_rev", "verdict", "detected_pct", "p", "bisect",
		"author_name", "author_email", "subject"}, "ittttbffftti" + "tttfft" + "ttt"},
	{"marks", []string{"id", "alert_id", "real", "note", "created"}, "iibtt"},
	{"build_failures", []string{"id", "device", "rev", "error", "created"}, "itttt"},
}

// TableCount is one table's rows.
type TableCount struct {
	Table string
	Rows  int
}

// Copied is what Copy did: each table's rows and the checksum of the
// whole history, the same on both sides.
type Copied struct {
	Tables   []TableCount
	Checksum string
}

// Copy writes every row of from into to (SQLite or PostgreSQL, either
// way), keeping every id, in one transaction on to, which must hold no
// history yet; then it counts and checksums both sides and fails unless
// they agree (nothing lost, nothing changed).
func Copy(ctx context.Context, from, to *DB) (Copied, error) {
	var c Copied
	var n int
	if err := to.db.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM alerts) + (SELECT count(*) FROM build_failures)").Scan(&n); err != nil {
		return c, fmt.Errorf("history %s: %w", to.path, err)
	}
	if n > 0 {
		return c, fmt.Errorf("history %s already holds %d runs, alerts or build failures: copy writes only into an empty history", to.path, n)
	}
	tx, err := to.db.BeginTx(ctx, nil)
	if err != nil {
		return c, fmt.Errorf("history %s: %w", to.path, err)
	}
	defer tx.Rollback()
	for _, t := range copyTables {
		rows, err := from.db.QueryContext(ctx, "SELECT "+strings.Join(t.cols, ", ")+" FROM "+t.name+" ORDER BY id")
		if err != nil {
			return c, fmt.Errorf("history %s: %s: %w", from.path, t.name, err)
		}
		insert := "INSERT INTO " + t.name + " (" + strings.Join(t.cols, ", ") + ") VALUES (" + strings.TrimSuffix(strings.Repeat("?, ", len(t.cols)), ", ") + ")"
		for rows.Next() {
			vals := scanTargets(t.kind)
			if err := rows.Scan(vals...); err != nil {
				rows.Close()
				return c, fmt.Errorf("history %s: %s: %w", from.path, t.name, err)
			}
			if _, err := tx.ExecContext(ctx, insert, derefAll(vals)...); err != nil {
				rows.Close()
				return c, fmt.Errorf("history %s: %s: %w", to.path, t.name, err)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return c, fmt.Errorf("history %s: %s: %w", from.path, t.name, err)
		}
		if to.db.pg {
			// The identity goes on after the ids copied.
			if _, err := tx.ExecContext(ctx, "SELECT setval(pg_get_serial_sequence('"+t.name+"', 'id'), coalesce(max(id), 0) + 1, false) FROM "+t.name); err != nil {
				return c, fmt.Errorf("history %s: %s: %w", to.path, t.name, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return c, fmt.Errorf("history %s: %w", to.path, err)
	}
	a, err := from.Checksum(ctx)
	if err != nil {
		return c, err
	}
	b, err := to.Checksum(ctx)
	if err != nil {
		return c, err
	}
	if a.Checksum != b.Checksum || fmt.Sprint(a.Tables) != fmt.Sprint(b.Tables) {
		return b, fmt.Errorf("the copy differs from %s: %v %s against %v %s", from.path, b.Tables, b.Checksum, a.Tables, a.Checksum)
	}
	return b, nil
}

// Checksum counts each table's rows and hashes them all, in id order,
// values in one canonical form whichever store holds them (SHA-256).
func (d *DB) Checksum(ctx context.Context) (Copied, error) {
	var c Copied
	h := sha256.New()
	for _, t := range copyTables {
		rows, err := d.db.QueryContext(ctx, "SELECT "+strings.Join(t.cols, ", ")+" FROM "+t.name+" ORDER BY id")
		if err != nil {
			return c, fmt.Errorf("history %s: %s: %w", d.path, t.name, err)
		}
		n := 0
		for rows.Next() {
			vals := scanTargets(t.kind)
			if err := rows.Scan(vals...); err != nil {
				rows.Close()
				return c, fmt.Errorf("history %s: %s: %w", d.path, t.name, err)
			}
			writeCanonical(h, t.name, vals)
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return c, fmt.Errorf("history %s: %s: %w", d.path, t.name, err)
		}
		c.Tables = append(c.Tables, TableCount{t.name, n})
	}
	c.Checksum = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return c, nil
}

// scanTargets are the destinations of one row of the given column kinds.
func scanTargets(kind string) []any {
	out := make([]any, len(kind))
	for i, k := range kind {
		switch k {
		case 'i':
			out[i] = new(int64)
		case 't':
			out[i] = new(string)
		case 'f':
			out[i] = new(sql.NullFloat64)
		case 'b':
			out[i] = new(bool)
		}
	}
	return out
}

// derefAll is the values the targets hold, to insert.
func derefAll(vals []any) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case *int64:
			out[i] = *v
		case *string:
			out[i] = *v
		case *sql.NullFloat64:
			if v.Valid {
				out[i] = v.Float64
			}
		case *bool:
			out[i] = *v
		}
	}
	return out
}

// writeCanonical hashes one row: its table, then each value tagged with
// its kind, floats in their shortest exact form.
func writeCanonical(h hash.Hash, table string, vals []any) {
	var b strings.Builder
	b.WriteString(table)
	for _, v := range vals {
		b.WriteByte(0)
		switch v := v.(type) {
		case *int64:
			b.WriteString("i" + strconv.FormatInt(*v, 10))
		case *string:
			b.WriteString("t" + strconv.Quote(*v))
		case *sql.NullFloat64:
			if v.Valid {
				b.WriteString("f" + strconv.FormatFloat(v.Float64, 'g', -1, 64))
			} else {
				b.WriteString("null")
			}
		case *bool:
			b.WriteString("b" + strconv.FormatBool(*v))
		}
	}
	b.WriteByte('\n')
	h.Write([]byte(b.String()))
}
