package history_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/internal/pgtest"
	"github.com/perflab/perflab/sessions/history"
)

// cluster is the test binary's private PostgreSQL cluster, started by the
// first test that needs one and stopped by TestMain.
var (
	clusterOnce sync.Once
	cluster     *pgtest.Cluster
	clusterErr  error
	databases   atomic.Int32
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
	}
	os.Exit(code)
}

// pgURL is a new empty database on the cluster.
func pgURL(t *testing.T) string {
	t.Helper()
	clusterOnce.Do(func() { cluster, clusterErr = pgtest.Start() })
	if clusterErr != nil {
		t.Fatalf("PostgreSQL: %v", clusterErr)
	}
	u, err := cluster.NewDatabase(context.Background(), fmt.Sprintf("h%d", databases.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// backends are the two stores every history test runs on.
func backends(t *testing.T) map[string]string {
	return map[string]string{
		"sqlite":     filepath.Join(t.TempDir(), "h.db"),
		"postgresql": pgURL(t),
	}
}

// TestBothStores runs the history's operations on SQLite and on a real
// PostgreSQL server: open (creating the schema), import a session and a
// CSV (again: nothing added), the series and their values, alerts and
// marks, a watch's done commits and build failures, the browser's
// queries; the two give the same answers.
func TestBothStores(t *testing.T) {
	ctx := context.Background()
	session, err := filepath.Abs("../../cli/testdata/sim-effect.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for name, path := range backends(t) {
		t.Run(name, func(t *testing.T) {
			db, err := history.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if strings.Contains(db.Path(), cluster.Password) {
				t.Errorf("the history's name shows the password: %s", db.Path())
			}
			for i := range 2 {
				im, err := db.ImportFile(ctx, session)
				if err != nil {
					t.Fatal(err)
				}
				if i == 1 && (im.Runs != 0 || im.Known != 1) {
					t.Errorf("second import %+v, want nothing new", im)
				}
			}
			if _, err := db.ImportCSV(ctx, "../../examples/history.csv", "lab"); err != nil {
				t.Fatal(err)
			}
			rows, err := db.Results(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, s := range history.AllSeries(rows) {
				fmt.Fprintf(&b, "%s/%s:%d:%.4g;", s.Device, s.Metric, len(s.Points), s.Values()[len(s.Values())-1])
			}
			keys, err := db.SeriesKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "keys %d;", len(keys))
			a, err := db.AddAlert(ctx, history.Alert{Device: "lab", Metric: keys[0].Metric, Rev: "c1", Confirmed: true,
				Verdict: analysis.VerdictRegression, DeltaPct: 2, Sessions: []string{session}})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.MarkAlert(ctx, a.ID, true, "real step"); err != nil {
				t.Fatal(err)
			}
			alerts, err := db.Alerts(ctx)
			if err != nil || len(alerts) != 1 || alerts[0].Mark == nil || !alerts[0].Mark.Real || !alerts[0].Confirmed {
				t.Fatalf("alerts %+v, %v", alerts, err)
			}
			if err := db.MarkAlert(ctx, 99, true, ""); err == nil {
				t.Error("marking an unknown alert")
			}
			if err := db.RecordBuildFailure(ctx, "lab", "c9", "does not build"); err != nil {
				t.Fatal(err)
			}
			done, err := db.DoneRevs(ctx, "lab")
			if err != nil || !done["c9"] {
				t.Errorf("done %v, %v", done, err)
			}
			known, err := db.Knows(ctx, session)
			unknown, err2 := db.Knows(ctx, "/etc/passwd")
			if err != nil || err2 != nil || !known || unknown {
				t.Errorf("knows the session %v, /etc/passwd %v (%v, %v)", known, unknown, err, err2)
			}
			results[name] = b.String()
			// A second open finds the schema and migrates nothing.
			db2, err := history.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			db2.Close()
		})
	}
	if results["sqlite"] != results["postgresql"] {
		t.Errorf("the stores disagree:\nsqlite     %s\npostgresql %s", results["sqlite"], results["postgresql"])
	}
}

// TestPostgresRefusals: a database of another program is refused and left
// alone; a wrong password is an error that does not print it.
func TestPostgresRefusals(t *testing.T) {
	ctx := context.Background()
	u := pgURL(t)
	other, err := history.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	foreign := pgURL(t)
	conn, err := pgx.Connect(ctx, foreign)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE TABLE orders (id int)")
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := history.Open(ctx, foreign); err == nil || !strings.Contains(err.Error(), "another program") {
		t.Errorf("another program's database: %v", err)
	}
	bad := strings.Replace(u, cluster.Password, "wrong-secret", 1)
	_, err = history.Open(ctx, bad)
	if err == nil || strings.Contains(err.Error(), "wrong-secret") || !strings.Contains(err.Error(), "xxxxx") {
		t.Errorf("wrong password: %v", err)
	}
}

// TestCopyBothWays: a history copied from SQLite to PostgreSQL and back
// keeps every row (counts and checksum equal at each step, ids kept, a
// mark still on its alert); a copy into a history that holds rows is
// refused; the copy on PostgreSQL goes on taking new rows.
func TestCopyBothWays(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := history.Open(ctx, filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	session, _ := filepath.Abs("../../cli/testdata/sim-effect.jsonl")
	if _, err := src.ImportFile(ctx, session); err != nil {
		t.Fatal(err)
	}
	if _, err := src.ImportCSV(ctx, "../../examples/history.csv", ""); err != nil {
		t.Fatal(err)
	}
	a, err := src.AddAlert(ctx, history.Alert{Device: "d", Metric: "m", Rev: "r", Confirmed: true, Verdict: "regression", DeltaPct: analysis.Float(1.5)})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.MarkAlert(ctx, a.ID, false, "noise"); err != nil {
		t.Fatal(err)
	}
	if err := src.RecordBuildFailure(ctx, "d", "r2", "no"); err != nil {
		t.Fatal(err)
	}
	pg, err := history.Open(ctx, pgURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	there, err := history.Copy(ctx, src, pg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := history.Open(ctx, filepath.Join(dir, "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	again, err := history.Copy(ctx, pg, back)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := src.Checksum(ctx)
	if there.Checksum != orig.Checksum || again.Checksum != orig.Checksum || fmt.Sprint(again.Tables) != fmt.Sprint(orig.Tables) {
		t.Errorf("checksums %s → %s → %s; tables %v %v", orig.Checksum, there.Checksum, again.Checksum, orig.Tables, again.Tables)
	}
	alerts, _ := back.Alerts(ctx)
	if len(alerts) != 1 || alerts[0].ID != a.ID || alerts[0].Mark == nil || alerts[0].Mark.Note != "noise" || !alerts[0].Confirmed {
		t.Errorf("alerts after the round trip %+v", alerts)
	}
	if _, err := history.Copy(ctx, src, back); err == nil || !strings.Contains(err.Error(), "only into an empty history") {
		t.Errorf("copy into a history with rows: %v", err)
	}
	if _, err := pg.AddAlert(ctx, history.Alert{Device: "d", Metric: "m", Rev: "r3"}); err != nil {
		t.Errorf("a new alert after the copy: %v", err)
	}
}

// TestClaimOnAServer: two watches (two connections to one server) never
// hold the same (device, commit); one whose holder dies (its connection
// gone) is free again; a file's claim always succeeds.
func TestClaimOnAServer(t *testing.T) {
	ctx := context.Background()
	u := pgURL(t)
	a, err := history.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	b, err := history.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	release, ok, err := a.Claim(ctx, "Pixel 3", "c1")
	if err != nil || !ok {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if _, ok, err := b.Claim(ctx, "Pixel 3", "c1"); err != nil || ok {
		t.Errorf("second claim of the same commit: %v %v", ok, err)
	}
	if rel, ok, err := b.Claim(ctx, "Pixel 3", "c2"); err != nil || !ok {
		t.Errorf("another commit: %v %v", ok, err)
	} else {
		rel()
	}
	release()
	rel, ok, err := b.Claim(ctx, "Pixel 3", "c1")
	if err != nil || !ok {
		t.Fatalf("after release: %v %v", ok, err)
	}
	rel()
	// The holder dies: its connections end, the server frees the claim.
	if _, ok, err := a.Claim(ctx, "Pixel 3", "c3"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	a.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rel, ok, err := b.Claim(ctx, "Pixel 3", "c3")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			rel()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a dead holder's claim was never freed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	file, err := history.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for range 2 {
		if rel, ok, err := file.Claim(ctx, "d", "r"); err != nil || !ok {
			t.Errorf("file claim: %v %v", ok, err)
		} else {
			rel()
		}
	}
}

// TestServerGoneMidImport: a server killed while an import is writing
// leaves nothing of it; once the server is back the same import adds it
// whole. A URL that does not parse is one clear error.
func TestServerGoneMidImport(t *testing.T) {
	ctx := context.Background()
	c, err := pgtest.Start() // a cluster of its own: this test kills it
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	u, err := c.NewDatabase(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("commit")
	for m := range 20 {
		fmt.Fprintf(&b, ",m%d", m)
	}
	b.WriteString("\n")
	for i := range 1500 {
		fmt.Fprintf(&b, "c%d", i)
		for m := range 20 {
			fmt.Fprintf(&b, ",%d", 100+m+i%7)
		}
		b.WriteString("\n")
	}
	csv := filepath.Join(t.TempDir(), "big.csv")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := history.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.ImportCSV(ctx, csv, "lab")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // the import is writing its 30,000 rows
	t0 := time.Now()
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Skip("the import finished before the server went away; nothing to check")
	}
	t.Logf("killed and the import failed in %v", time.Since(t0))
	db.Close()
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	db, err = history.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if rows, err := db.Results(ctx); err != nil || len(rows) != 0 {
		t.Fatalf("after the server went away mid-import: %d rows, %v; want none", len(rows), err)
	}
	t0 = time.Now()
	im, err := db.ImportCSV(ctx, csv, "lab")
	t.Logf("the import again in %v", time.Since(t0))
	if err != nil || im.Rows != 30000 {
		t.Errorf("the import again: %+v, %v", im, err)
	}
	if _, err := history.Open(ctx, "postgres://user:pw@host:notaport/db"); err == nil || strings.Contains(err.Error(), "pw@") {
		t.Errorf("a bad URL: %v", err)
	}
}
