package web

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/internal/gittest"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/sessions/page"
	"github.com/perflab/perflab/sessions/watch"
)

// TestDashboardInChromium opens the dashboard in headless Chromium over
// a history made by a real watch of the simulated phone (12 commits, a
// 4% step at the 7th): from the series list to the series (its chart,
// change point, confirmed alert and the builds' verdicts) to the alert's
// session page; any console error, script exception, failed request or
// error status fails it.
func TestDashboardInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium: apt-get install chromium (./test.sh does)")
	}
	ctx := context.Background()
	repo := gittest.New(t)
	for i := 1; i <= 12; i++ {
		eff := 0
		if i >= 7 {
			eff = 4
		}
		repo.Commit(fmt.Sprintf("commit %d", i), map[string]string{watch.SimFile: fmt.Sprintf(`{"app": "feed", "effect_pct": %d}`, eff), "n": fmt.Sprint(i)})
	}
	exp := filepath.Join(t.TempDir(), "watch.json")
	os.WriteFile(exp, []byte(`{"device": "sim:pixel", "order": "random", "seed": 5, "trials": 10, "warmup": 1, "metrics": ["startup_ms"],
		"controls": {"governor": "recommended", "restore_snapshot": true, "kill_app": true, "dismiss_dialogs": true,
		"clock_reset": true, "proxy": "replay", "tmpfs": true, "drop_caches": true}}`), 0o644)
	loaded, err := watch.LoadExperiment(exp)
	if err != nil {
		t.Fatal(err)
	}
	db, err := history.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w, err := watch.New(ctx, watch.Config{Repo: repo.Dir, Since: "HEAD~11", Loaded: *loaded, History: db, Lab: bisect.SimLab(),
		Dir: t.TempDir(), Cache: t.TempDir(), Tool: "test", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Run(ctx); err != nil || len(r.Alerts) == 0 {
		t.Fatalf("watch: %+v, %v", r, err)
	}
	s := &Server{DB: db, Detect: changepoint.Options{}, Logf: t.Logf,
		Session: func(out io.Writer, path string) error {
			sess, err := sessions.Load(path)
			if err != nil {
				return err
			}
			plan := &sess.Header.Plan
			rep := engine.Analyse(plan, sessions.ArmInputs(sess.Events, len(plan.ArmKeys())), engine.Options(plan))
			return page.HTML(out, page.Input{Session: sess, Reports: rep.Reports()})
		},
		Bisect: func(path string) (string, error) { return "bisect " + path, nil }}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()

	alloc, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Flag("headless", true), chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 2*time.Minute) // only catches a hang
	defer cancel()
	var mu sync.Mutex
	var problems []string
	listenErr := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				problems = append(problems, fmt.Sprintf("console error: %v", e.Args))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *network.EventLoadingFailed:
			problems = append(problems, "request failed: "+e.ErrorText)
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 {
				problems = append(problems, fmt.Sprintf("%d %s", e.Response.Status, e.Response.URL))
			}
		}
	})
	if listenErr != nil {
		t.Fatal(listenErr)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(what string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text("body"))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return s
	}
	// Follow a link as a click does (its href, resolved by the page).
	follow := func(what, sel string) {
		t.Helper()
		href, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('`+sel+`').href`))
		if err != nil || href == "" {
			t.Fatalf("%s: no link %s: %v", what, sel, err)
		}
		step(what, chromedp.Navigate(href), chromedp.WaitReady("body"))
	}
	step("the list", chromedp.Navigate(ts.URL+"/"), chromedp.WaitReady("body"))
	list := text("the list")
	follow("a series", `a[href^="/series"]`)
	series := text("a series")
	svgs, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("svg").length`))
	if err != nil {
		t.Fatal(err)
	}
	follow("a session", `a[href^="/session"]`)
	session := text("a session")
	for _, c := range []struct{ page, text, want string }{
		{"list", list, "alert 1: confirmed regression"},
		{"series", series, "step at"},
		{"series", series, "alert 1: confirmed regression"},
		{"series", series, "first bad"},
		{"series", series, "regression"},
		{"session", session, "metric changed"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s page: no %q in\n%s", c.page, c.want, c.text)
		}
	}
	if svgs == 0 {
		t.Error("the series page has no chart")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the browser saw: %v", problems)
	}
}
