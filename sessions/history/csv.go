package history

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/perflab/perflab/examples"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis"
)

// CSVError is bad input in a CSV file: the file, line and field named.
type CSVError struct {
	File  string
	Line  int
	Field string // the column's name, or "" for the line as a whole
	Err   string
}

func (e *CSVError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: field %s: %s", e.File, e.Line, e.Field, e.Err)
}

// timeLayouts are the time formats a CSV's time column may use (besides
// Unix seconds).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"}

// parseTime reads a CSV time cell as UTC RFC 3339.
func parseTime(s string) (string, error) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC().Format(time.RFC3339Nano), nil
		}
	}
	if sec, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(sec) && !math.IsInf(sec, 0) {
		return time.Unix(0, int64(sec*1e9)).UTC().Format(time.RFC3339Nano), nil
	}
	return "", errors.New("not a time (RFC 3339, 2006-01-02 15:04:05, 2006-01-02 or Unix seconds): " + strconv.Quote(s))
}

// ParseCSV reads a history kept elsewhere, laid out as Apache Otava reads
// it: a header line, a time column and/or a commit column (named time,
// timestamp or date; commit, rev or revision), then one column per
// metric, one line per build in order. An empty cell is a missing value.
// The device of every row is device. Any bad line or cell is an error
// naming the file, line and field.
func ParseCSV(name string, data []byte, device string) ([]Result, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	bad := func(line int, field, format string, args ...any) error {
		return &CSVError{File: name, Line: line, Field: field, Err: fmt.Sprintf(format, args...)}
	}
	header, err := r.Read()
	if err == io.EOF {
		return nil, bad(1, "", "empty file: want a header line (time or commit, then one column per metric)")
	}
	if err != nil {
		return nil, csvReadError(name, err)
	}
	timeCol, revCol := -1, -1
	var metrics []int
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		header[i] = h
		switch strings.ToLower(h) {
		case "time", "timestamp", "date":
			if timeCol >= 0 {
				return nil, bad(1, h, "a second time column")
			}
			timeCol = i
		case "commit", "rev", "revision":
			if revCol >= 0 {
				return nil, bad(1, h, "a second commit column")
			}
			revCol = i
		case "":
			return nil, bad(1, fmt.Sprintf("%d", i+1), "column %d has no name", i+1)
		default:
			if seen[h] {
				return nil, bad(1, h, "metric named twice")
			}
			seen[h] = true
			metrics = append(metrics, i)
		}
	}
	if timeCol < 0 && revCol < 0 {
		return nil, bad(1, "", "no time or commit column (want a column named time, timestamp, date, commit, rev or revision)")
	}
	if len(metrics) == 0 {
		return nil, bad(1, "", "no metric column after the time or commit column")
	}
	var out []Result
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvReadError(name, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			return nil, bad(line, "", "%d fields, the header has %d", len(rec), len(header))
		}
		base := Result{Kind: "csv", Device: device, Seq: line}
		if revCol >= 0 {
			base.Rev = strings.TrimSpace(rec[revCol])
			if base.Rev == "" {
				return nil, bad(line, header[revCol], "empty commit")
			}
			base.Build = base.Rev
		}
		if timeCol >= 0 {
			t, err := parseTime(strings.TrimSpace(rec[timeCol]))
			if err != nil {
				return nil, bad(line, header[timeCol], "%v", err)
			}
			base.RevTime, base.OrdTime = t, t
			if base.Build == "" {
				base.Build = t
			}
		}
		for _, c := range metrics {
			cell := strings.TrimSpace(rec[c])
			if cell == "" {
				continue
			}
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, bad(line, header[c], "not a number: %q", cell)
			}
			x := base
			x.Metric, x.N, x.Median = header[c], 1, analysis.Float(v)
			x.DeltaPct, x.CILowPct, x.CIHighPct = analysis.Float(math.NaN()), analysis.Float(math.NaN()), analysis.Float(math.NaN())
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, bad(2, "", "no values: the file has a header and nothing else")
	}
	return out, nil
}

// csvReadError names the file and line of encoding/csv's error.
func csvReadError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &CSVError{File: name, Line: pe.Line, Err: pe.Err.Error()}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// ImportCSV adds a CSV history (ParseCSV) whose rows are all on device
// ("" names it after the file: "csv:NAME"). The file is one run keyed by
// its content: importing the same file again adds nothing. Nothing is
// written unless the whole file reads.
func (d *DB) ImportCSV(ctx context.Context, path, device string) (Imported, error) {
	data, err := examples.ReadFile(path)
	if err != nil {
		return Imported{File: path}, err
	}
	if device == "" {
		device = "csv:" + filepath.Base(path)
	}
	rows, err := ParseCSV(path, data, device)
	if err != nil {
		return Imported{File: path}, err
	}
	sum := sha256.Sum256(data)
	key := "csv:" + hex.EncodeToString(sum[:])
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	for i := range rows {
		rows[i].Run = key
		rows[i].Session = abs
	}
	return d.insert(ctx, path, []run{{key: key, kind: "csv", source: abs, rows: rows}})
}
