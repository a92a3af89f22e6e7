package web

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/sessions/page"
)

const sampleSession = "../../cli/testdata/sim-effect.jsonl"

// testServer is a history of the CLI's sample session and the example
// CSV history, with one confirmed alert on the CSV's first series, served
// with token (none: open).
func testServer(t *testing.T, token string) (*httptest.Server, *history.DB, history.Alert) {
	t.Helper()
	ctx := context.Background()
	db, err := history.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	session, err := filepath.Abs(sampleSession)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ImportFile(ctx, session); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ImportCSV(ctx, "../../examples/history.csv", ""); err != nil {
		t.Fatal(err)
	}
	keys, err := db.SeriesKeys(ctx)
	if err != nil || len(keys) < 2 {
		t.Fatalf("series %v, %v", keys, err)
	}
	csv := keys[0]
	for _, k := range keys {
		if strings.HasPrefix(k.Device, "csv:") {
			csv = k
		}
	}
	ser, _, err := db.SeriesOf(ctx, csv.Device, csv.Metric)
	if err != nil {
		t.Fatal(err)
	}
	a, err := db.AddAlert(ctx, history.Alert{Device: csv.Device, Metric: csv.Metric, Rev: ser.Points[10].Rev, Index: 10,
		Confirmed: true, Verdict: analysis.VerdictRegression, DeltaPct: 4.2, CILowPct: 2.1, CIHighPct: 6.3,
		DetectedPct: 4, P: 1e-6, Sessions: []string{session}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{DB: db, Token: token, Detect: changepoint.Options{},
		Session: func(w io.Writer, path string) error {
			sess, err := sessions.Load(path)
			if err != nil {
				return err
			}
			plan := &sess.Header.Plan
			rep := engine.Analyse(plan, sessions.ArmInputs(sess.Events, len(plan.ArmKeys())), engine.Options(plan))
			return page.HTML(w, page.Input{Session: sess, Reports: rep.Reports()})
		},
		Bisect: func(path string) (string, error) { return "", nil },
		Logf:   t.Logf}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, db, a
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPages: the list (the series with the alert first, a small chart
// each), a series page (chart, change points, the alert with its
// confirmation's session, the builds with links), a session page, and
// 404 pages for an unknown series, a file the history does not name and
// an unknown path.
func TestPages(t *testing.T) {
	ts, _, a := testServer(t, "")
	c := ts.Client()
	code, body := get(t, c, ts.URL+"/")
	if code != 200 || !strings.Contains(body, "<svg") || !strings.Contains(body, "alert 1: confirmed regression") {
		t.Fatalf("index: %d\n%s", code, body)
	}
	first := strings.Index(body, `<a href="/series?`)
	if first < 0 || !strings.Contains(body[first:first+200], url.QueryEscape(a.Device)) {
		t.Errorf("the series with the alert is not listed first:\n%s", body)
	}
	link := seriesLink(a.Device, a.Metric, 0)
	code, body = get(t, c, ts.URL+link)
	for _, want := range []string{"<svg", "Change points", "alert 1: confirmed regression", "Builds, newest first", "/session?file="} {
		if !strings.Contains(body, want) {
			t.Errorf("series page: no %q (status %d)", want, code)
		}
	}
	code, body = get(t, c, ts.URL+fileLink("/session", a.Sessions[0]))
	if code != 200 || !strings.Contains(body, "1 of 1 metric changed") {
		t.Errorf("session page: %d\n%.500s", code, body)
	}
	for _, u := range []string{seriesLink("nowhere", "nothing", 0), fileLink("/session", "/etc/passwd"), fileLink("/bisect", "x.json"),
		"/nope", "/session"} {
		if code, body := get(t, c, ts.URL+u); code != 404 || !strings.Contains(body, "404 Not Found") || strings.Contains(body, "goroutine") {
			t.Errorf("%s: %d, want a 404 page\n%s", u, code, body)
		}
	}
}

// TestPaging: a series page past its last page shows the last; the list
// pages at PageSize.
func TestPaging(t *testing.T) {
	ts, _, a := testServer(t, "")
	code, body := get(t, ts.Client(), ts.URL+seriesLink(a.Device, a.Metric, 0)+"&page=99")
	if code != 200 || !strings.Contains(body, "Builds, newest first") {
		t.Errorf("page 99: %d", code)
	}
}

// TestToken: with a token every page asks for it; a ?token= link sets
// the cookie and drops it from the address; a bearer token works; the
// mark form records a mark; without a token marking is refused.
func TestToken(t *testing.T) {
	ts, db, a := testServer(t, "s3cret")
	c := ts.Client()
	if code, _ := get(t, c, ts.URL+"/"); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("bearer: %v %v", resp, err)
	}
	jar, _ := cookiejar.New(nil)
	c.Jar = jar
	resp, err := c.Get(ts.URL + "/?token=s3cret")
	if err != nil || resp.StatusCode != 200 || strings.Contains(resp.Request.URL.String(), "token") {
		t.Fatalf("link: %v %v", resp, err)
	}
	form := url.Values{"real": {"false"}, "note": {"a noisy week"}, "back": {seriesLink(a.Device, a.Metric, 0)}}
	resp, err = c.PostForm(ts.URL+"/alerts/1/mark", form)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(resp.Request.URL.Path, "/series") {
		t.Fatalf("mark: %v %v", resp, err)
	}
	alerts, _ := db.Alerts(context.Background())
	if alerts[0].Mark == nil || alerts[0].Mark.Real || alerts[0].Mark.Note != "a noisy week" {
		t.Errorf("mark %+v", alerts[0].Mark)
	}
	if resp, _ := c.PostForm(ts.URL+"/alerts/99/mark", form); resp.StatusCode != 404 {
		t.Errorf("unknown alert: %d", resp.StatusCode)
	}
	open, _, _ := testServer(t, "")
	if resp, _ := open.Client().PostForm(open.URL+"/alerts/1/mark", form); resp.StatusCode != http.StatusForbidden {
		t.Errorf("marking without a token: %d, want 403", resp.StatusCode)
	}
}

// TestPanicIsAPage: a failing page is a 500 page, never a stack trace.
func TestPanicIsAPage(t *testing.T) {
	ts, db, a := testServer(t, "")
	s := &Server{DB: db, Session: func(io.Writer, string) error { panic("boom") }, Logf: t.Logf}
	ts2 := httptest.NewServer(s.Handler())
	defer ts2.Close()
	_ = ts
	code, body := get(t, ts2.Client(), ts2.URL+fileLink("/session", a.Sessions[0]))
	if code != 500 || strings.Contains(body, "boom") || strings.Contains(body, "goroutine") {
		t.Errorf("%d\n%s", code, body)
	}
}
