package history_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/internal/gensession"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/history"
)

func openTemp(t *testing.T) (*history.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "history.db")
	db, err := history.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func TestHistoryImportSession(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	sess := filepath.Join(t.TempDir(), "s.jsonl")
	if err := gensession.Write(sess, 60, 0.05, 1); err != nil {
		t.Fatal(err)
	}
	im, err := db.ImportFile(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	if im.Runs != 1 || im.Rows != 6 || im.Known != 0 {
		t.Fatalf("first import %+v, want 1 run of 6 rows (3 metrics × 2 builds)", im)
	}
	again, err := db.ImportFile(ctx, sess)
	if err != nil {
		t.Fatal(err)
	}
	if again.Runs != 0 || again.Rows != 0 || again.Known != 1 {
		t.Errorf("second import %+v, want nothing added and 1 known", again)
	}
	rows, err := db.Results(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows after importing twice, want 6", len(rows))
	}
	for _, r := range rows {
		if r.Kind != "run" || r.N != 30 || !r.Median.Defined() {
			t.Errorf("row %+v: want kind run, n 30, a median", r)
		}
		abs, _ := filepath.Abs(sess)
		if r.Session != abs {
			t.Errorf("row's session %q, want %q", r.Session, abs)
		}
		switch r.Build {
		case "./a":
			if r.DeltaPct.Defined() || r.Control != "" {
				t.Errorf("control row %+v has a Δ or a control", r)
			}
		case "./b":
			// gensession's treatment is 5% slower on every metric.
			if r.Control != "./a" || !(r.CILowPct < 5 && 5 < r.CIHighPct) || !r.DeltaPct.Defined() || r.Verdict == "" {
				t.Errorf("treatment row %+v: want a Δ whose CI holds +5%%, a verdict, control ./a", r)
			}
		default:
			t.Errorf("row of build %q", r.Build)
		}
	}
	series := history.AllSeries(rows)
	if len(series) != 3 || len(series[0].Points) != 2 {
		t.Errorf("series %+v, want 3 of 2 points", series)
	}
}

func TestHistoryCSV(t *testing.T) {
	check := func(name, data, wantErr string, wantRows int) {
		t.Helper()
		ctx := context.Background()
		db, _ := openTemp(t)
		path := filepath.Join(t.TempDir(), "h.csv")
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		im, err := db.ImportCSV(ctx, path, "")
		rows, qerr := db.Results(ctx)
		if qerr != nil {
			t.Fatal(qerr)
		}
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), path+":"+wantErr) {
				t.Errorf("%s: error %v, want one starting %s:%s", name, err, path, wantErr)
			}
			if len(rows) != 0 {
				t.Errorf("%s: %d rows written from a bad file, want none", name, len(rows))
			}
			return
		}
		if err != nil || im.Rows != wantRows || len(rows) != wantRows {
			t.Errorf("%s: import %+v, %v; %d rows, want %d", name, im, err, len(rows), wantRows)
		}
	}
	check("time and two metrics", "time,startup_ms,rss_mb\n2026-01-01T00:00:00Z,100,50\n2026-01-02,101,51\n", "", 4)
	check("commit, a missing cell", "commit,startup_ms,rss_mb\nabc1,100,50\nabc2,,51\n", "", 3)
	check("unix time and commit", "commit,time,x\nabc1,1700000000,1\n", "", 1)
	check("quoted cells", "commit,\"a,b\"\n\"c1\",\"3.5\"\n", "", 1)
	check("not a number", "time,startup_ms,rss_mb\n2026-01-01,100,50\n2026-01-02,1O1,51\n", "3: field startup_ms: not a number", 0)
	check("bad time", "time,x\nyesterday,1\n", "2: field time: not a time", 0)
	check("short line", "commit,x,y\nc1,1\n", "2: 2 fields, the header has 3", 0)
	check("no time or commit", "a,b\n1,2\n", "1: no time or commit column", 0)
	check("header only", "commit,x\n", "2: no values", 0)
	check("empty", "", "1: empty file", 0)
	check("NaN", "commit,x\nc1,NaN\n", "2: field x: not a number", 0)
	check("metric twice", "commit,x,x\nc1,1,2\n", "1: field x: metric named twice", 0)
	check("bad quote", "commit,x\nc1,\"2\n", "2:", 0)
}

// TestHistoryCSVTwice: the same file again adds nothing; its series keeps
// the file's order.
func TestHistoryCSVTwice(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	path := filepath.Join(t.TempDir(), "h.csv")
	if err := os.WriteFile(path, []byte("commit,x\nc3,3\nc1,1\nc2,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{3, 0} {
		im, err := db.ImportCSV(ctx, path, "")
		if err != nil || im.Rows != want {
			t.Fatalf("import %d: %+v, %v; want %d rows", i+1, im, err, want)
		}
	}
	rows, err := db.Results(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := history.AllSeries(rows)
	if len(s) != 1 || fmt.Sprint(s[0].Values()) != "[3 1 2]" || s[0].Device != "csv:h.csv" {
		t.Errorf("series %+v, want one on csv:h.csv with values 3 1 2", s)
	}
}

// TestHistoryRefusesForeign: a file that is not a perflab history is
// refused with its path named and left byte for byte as it was.
func TestHistoryRefusesForeign(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	makeForeign(t, other, "CREATE TABLE t(x); PRAGMA application_id = 42;")
	newer := filepath.Join(dir, "newer.db")
	db, err := history.Open(ctx, newer)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	makeForeign(t, newer, fmt.Sprintf("PRAGMA user_version = %d;", history.SchemaVersion()+1))
	truncated := filepath.Join(dir, "truncated.db")
	if err := os.WriteFile(truncated, []byte("SQLite format 3\x00\x10\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{text, "not an SQLite database"},
		{empty, "an empty file"},
		{other, "another program"},
		{newer, "newer than this perflab's"},
		{truncated, "left untouched"},
	} {
		before, _ := os.ReadFile(c.path)
		db, err := history.Open(ctx, c.path)
		if err == nil {
			db.Close()
			t.Errorf("%s opened, want refused", c.path)
			continue
		}
		if !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want the path and %q", c.path, err, c.want)
		}
		if after, _ := os.ReadFile(c.path); !bytes.Equal(before, after) {
			t.Errorf("%s was changed", c.path)
		}
		// The refused file gets no lock file beside it (newer.db had one
		// from the history it was).
		if _, err := os.Stat(c.path + ".lock"); c.path != newer && err == nil {
			t.Errorf("%s.lock left beside a refused file", c.path)
		}
	}
}

func makeForeign(t *testing.T, path, stmts string) {
	t.Helper()
	db, err := sql.Open(history.DriverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmts); err != nil {
		t.Fatal(err)
	}
}

// helperEnv makes the test binary a writer process of
// TestHistoryConcurrentProcesses.
const helperEnv = "PERFLAB_HISTORY_WRITER"

// TestHistoryConcurrentProcesses: two processes import into one file at
// once; every import lands, none fails on a lock.
func TestHistoryConcurrentProcesses(t *testing.T) {
	if spec := os.Getenv(helperEnv); spec != "" {
		writer(t, spec)
		return
	}
	dbPath := filepath.Join(t.TempDir(), "history.db")
	const files = 15
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for w := range 2 {
		dir := t.TempDir()
		for i := range files {
			data := fmt.Sprintf("commit,x_%d\nc%d,%d\nc%d,%d\n", w, i, i, i+1, i+1)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.csv", i)), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryConcurrentProcesses$")
		cmd.Env = append(os.Environ(), helperEnv+"="+dbPath+"|"+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, &out)
	}
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Errorf("writer %d: %v\n%s", i, err, outs[i])
		}
	}
	db, err := history.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Results(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*files*2 {
		t.Errorf("%d rows, want %d (2 writers × %d files × 2 lines)", len(rows), 2*files*2, files)
	}
}

// writer imports every CSV file of a folder, each in its own Open, as
// separate perflab commands would.
func writer(t *testing.T, spec string) {
	dbPath, dir, _ := strings.Cut(spec, "|")
	paths, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	for _, p := range paths {
		db, err := history.Open(context.Background(), dbPath)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ImportCSV(context.Background(), p, "dev"); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}

// TestHistoryImportBisectAndSuite: a bisect record brings its sessions,
// each build named and ordered as in the range (a session file named
// relative to the record is found beside it); a suite's session gives
// its two revisions.
func TestHistoryImportBisectAndSuite(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	dir := t.TempDir()
	ends, step := filepath.Join(dir, "ends.jsonl"), filepath.Join(dir, "step.jsonl")
	if err := gensession.Write(ends, 20, 0.05, 2); err != nil {
		t.Fatal(err)
	}
	if err := gensession.Write(step, 20, 0.05, 3); err != nil {
		t.Fatal(err)
	}
	rec := bisect.Record{Format: bisect.Format, Version: 1,
		Candidates: []bisect.Candidate{{Name: "v1", Rev: "aaa"}, {Name: "v2", Rev: "bbb"}, {Name: "v3", Rev: "ccc"}},
		Comparisons: []bisect.Comparison{
			{A: 0, B: 2, Purpose: bisect.PurposeEnds, Sessions: []string{ends}},
			{A: 0, B: 1, Purpose: bisect.PurposeStep, Sessions: []string{"step.jsonl"}},
		}}
	b, _ := json.Marshal(rec)
	recPath := filepath.Join(dir, "bisect.json")
	if err := os.WriteFile(recPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := db.ImportFile(ctx, recPath)
	if err != nil || im.Runs != 2 || im.Rows != 12 {
		t.Fatalf("bisect import %+v, %v; want 2 runs of 6 rows", im, err)
	}

	suite := filepath.Join(dir, "suite.jsonl")
	if err := gensession.Write(suite, 20, 0, 4); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(suite)
	head, rest, _ := bytes.Cut(data, []byte("\n"))
	var h map[string]any
	if err := json.Unmarshal(head, &h); err != nil {
		t.Fatal(err)
	}
	h["plan"].(map[string]any)["suite"] = map[string]any{"module": "example.com/m", "base": "v1.0.0", "base_rev": "b0", "head": "v1.1.0", "head_rev": "h1"}
	head, _ = json.Marshal(h)
	if err := os.WriteFile(suite, append(append(head, '\n'), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ImportFile(ctx, suite); err != nil {
		t.Fatal(err)
	}

	rows, err := db.Results(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var bis, sui []string
	for _, r := range rows {
		if r.Metric != "wall_ms" {
			continue
		}
		id := r.Build + "@" + r.Rev
		switch r.Kind {
		case "bisect":
			bis = append(bis, id)
		case "suite":
			sui = append(sui, id)
		}
	}
	// v1 is the control of both comparisons: two rows, one place in the series.
	if got := strings.Join(bis, " "); got != "v1@aaa v1@aaa v2@bbb v3@ccc" {
		t.Errorf("bisect rows %s, want v1@aaa twice, then v2@bbb, v3@ccc", got)
	}
	if got := strings.Join(sui, " "); got != "./a@b0 ./b@h1" {
		t.Errorf("suite rows %s, want ./a@b0 ./b@h1", got)
	}
	for _, s := range history.AllSeries(rows) {
		if s.Metric == "wall_ms" && s.Device == "local" && len(s.Points) != 5 {
			t.Errorf("wall_ms series of %d points, want 5 (v1, v2, v3, and the suite's two)", len(s.Points))
		}
	}
}

// killedEnv makes the test binary the writer TestHistoryKilledWriter
// kills in the middle of a transaction.
const killedEnv = "PERFLAB_HISTORY_KILLED"

// TestHistoryKilledWriter: a process killed (SIGKILL) inside a write
// transaction leaves the history whole: what it had written is not there,
// the file passes SQLite's integrity check and takes the next import.
func TestHistoryKilledWriter(t *testing.T) {
	if path := os.Getenv(killedEnv); path != "" {
		db, err := sql.Open(history.DriverName, "file:"+path+"?_pragma=busy_timeout(30000)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO runs (key, kind, source, created, imported) VALUES ('half', 'csv', 'x', '', '')"); err != nil {
			t.Fatal(err)
		}
		fmt.Println("in the transaction")
		select {} // until killed
	}
	ctx := context.Background()
	db, path := openTemp(t)
	db.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryKilledWriter$")
	cmd.Env = append(os.Environ(), killedEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "in the transaction") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("writer said %q", buf[:n])
	}
	cmd.Process.Kill()
	cmd.Wait()

	db, err = history.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	raw, err := sql.Open(history.DriverName, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var check string
	var half int
	if err := raw.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check %q, %v", check, err)
	}
	if err := raw.QueryRow("SELECT count(*) FROM runs WHERE key = 'half'").Scan(&half); err != nil || half != 0 {
		t.Errorf("%d rows of the killed transaction, %v", half, err)
	}
	csvPath := filepath.Join(t.TempDir(), "h.csv")
	if err := os.WriteFile(csvPath, []byte("commit,x\nc1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if im, err := db.ImportCSV(ctx, csvPath, ""); err != nil || im.Rows != 1 {
		t.Errorf("import after the kill: %+v, %v", im, err)
	}
}

// TestSeriesKeysAndKnows: the browser's queries list every series once,
// in order, across devices, and know only the files the history names.
func TestSeriesKeysAndKnows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := history.Open(ctx, filepath.Join(dir, "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, dev := range []string{"phone", "laptop"} {
		csv := filepath.Join(dir, dev+".csv")
		if err := os.WriteFile(csv, fmt.Appendf(nil, "commit,b_ms,a_ms\nc1,1,2\nc2,%d,2\n", i+1), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ImportCSV(ctx, csv, dev); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := db.SeriesKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		got = append(got, k.Device+"/"+k.Metric)
	}
	if strings.Join(got, " ") != "laptop/a_ms laptop/b_ms phone/a_ms phone/b_ms" {
		t.Errorf("series %v", got)
	}
	tail, err := db.Tail(ctx, "phone", "a_ms", 60)
	if err != nil || len(tail) != 2 || tail[0] != 2 {
		t.Errorf("tail %v, %v", tail, err)
	}
	if ok, err := db.Knows(ctx, "/etc/passwd"); ok || err != nil {
		t.Errorf("knows /etc/passwd: %v %v", ok, err)
	}
}
