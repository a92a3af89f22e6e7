// Package web is perflab serve: a read-only dashboard over a results
// history and its sessions, for the people an alert reaches who do not
// log into the lab host. Pages are rendered on the server (html/template,
// SVG charts drawn by perflab's own plots, no script); every page reads
// one series or one session, through the history's series index, so a
// history of a million rows pages as fast as a small one. The one write
// is marking an alert real or false, which needs the server's token.
package web

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/sessions/plot"
)

// Server serves one history.
type Server struct {
	DB *history.DB
	// Token, when set, is asked of every request (a bearer token, or the
	// cookie a ?token= link sets) and allows marking alerts; without it
	// the pages are open (loopback only, which the command enforces) and
	// nothing can be written.
	Token string
	// Session renders a session file as its report page (perflab report
	// --html); Bisect a bisect record as text (perflab bisect --show).
	Session func(w io.Writer, path string) error
	Bisect  func(path string) (string, error)
	// Detect are the change-point detector's options (history
	// changepoints').
	Detect changepoint.Options
	// Logf logs a failed request (nil: none).
	Logf func(format string, args ...any)
}

// PageSize is the rows a list or table shows per page.
const PageSize = 50

// maxDetect is the most builds of a series the detector searches (the
// newest ones): beyond it a page would wait on the search.
const maxDetect = 2000

// cookieName holds the token set from a ?token= link.
const cookieName = "perflab_token"

// Handler is the server's routes behind its token check and a recover
// that turns a panic into a 500 page, never a stack trace.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /series", s.series)
	mux.HandleFunc("GET /session", s.session)
	mux.HandleFunc("GET /bisect", s.bisect)
	mux.HandleFunc("POST /alerts/{id}/mark", s.mark)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no such page: "+r.URL.Path)
	})
	return s.guard(mux)
}

// guard checks the token and recovers from panics.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if s.Logf != nil {
					s.Logf("%s %s: panic: %v", r.Method, r.URL, v)
				}
				s.fail(w, r, http.StatusInternalServerError, "perflab serve failed on this page; the log says why")
			}
		}()
		if s.Token != "" {
			if t := r.URL.Query().Get("token"); t != "" && s.tokenOK(t) {
				// A link with the token: keep it in a cookie and drop it
				// from the address bar.
				http.SetCookie(w, &http.Cookie{Name: cookieName, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
				q := r.URL.Query()
				q.Del("token")
				u := *r.URL
				u.RawQuery = q.Encode()
				http.Redirect(w, r, u.String(), http.StatusSeeOther)
				return
			}
			if !s.authorized(r) {
				s.fail(w, r, http.StatusUnauthorized, "this perflab serve asks for its token: open the link with ?token=… it printed, or send Authorization: Bearer …")
				return
			}
		}
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'")
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenOK(t string) bool {
	return s.Token != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.Token)) == 1
}

// authorized reports whether r carries the token.
func (s *Server) authorized(r *http.Request) bool {
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.tokenOK(b) {
		return true
	}
	c, err := r.Cookie(cookieName)
	return err == nil && s.tokenOK(c.Value)
}

// fail writes an error page.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if s.Logf != nil && code >= 500 {
		s.Logf("%s %s: %s", r.Method, r.URL, msg)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	errorTemplate.Execute(w, struct {
		Code int
		Text string
		Msg  string
	}{code, http.StatusText(code), msg})
}

// render writes a page from t, or a 500 page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, t *template.Template, data any) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// listItem is a series on the index page.
type listItem struct {
	history.SeriesKey
	Link      string
	Spark     template.HTML
	Alert     *history.Alert // the newest
	AlertText string
}

// index lists the series, those with the newest alerts first, each with
// a small chart of its last builds.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	keys, err := s.DB.SeriesKeys(ctx)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	alerts, err := s.DB.Alerts(ctx)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	newest := map[[2]string]*history.Alert{}
	for i := range alerts {
		a := &alerts[i]
		newest[[2]string{a.Device, a.Metric}] = a // oldest first: the last wins
	}
	items := make([]listItem, len(keys))
	for i, k := range keys {
		items[i] = listItem{SeriesKey: k, Link: seriesLink(k.Device, k.Metric, 0)}
		if a := newest[[2]string{k.Device, k.Metric}]; a != nil {
			items[i].Alert, items[i].AlertText = a, alertText(*a)
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i].Alert, items[j].Alert
		switch {
		case a != nil && b != nil:
			return a.ID > b.ID
		case a != nil || b != nil:
			return a != nil
		}
		return false
	})
	page, pages := pageOf(r, len(items))
	items = items[page*PageSize : min((page+1)*PageSize, len(items))]
	for i := range items {
		tail, err := s.DB.Tail(ctx, items[i].Device, items[i].Metric, 60)
		if err == nil {
			items[i].Spark = sparkline(tail, 160, 32)
		}
	}
	s.render(w, r, indexTemplate, struct {
		Path       string
		Series     int
		Items      []listItem
		Prev, Next string
		Page       int
		Pages      int
	}{s.DB.Path(), len(keys), items, pageLink("/", r.URL.Query(), page-1, pages), pageLink("/", r.URL.Query(), page+1, pages), page + 1, pages})
}

// pageOf is the page a request asks for (?page=N, 1-based) among those
// n items make, clamped, 0-based.
func pageOf(r *http.Request, n int) (page, pages int) {
	pages = max(1, (n+PageSize-1)/PageSize)
	p, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || p < 1 {
		p = 1
	}
	return min(p, pages) - 1, pages
}

// pageLink is the link to page (0-based) with q's other parameters, ""
// when there is no such page.
func pageLink(path string, q url.Values, page, pages int) string {
	if page < 0 || page >= pages {
		return ""
	}
	v := url.Values{}
	for k, vs := range q {
		v[k] = vs
	}
	v.Set("page", strconv.Itoa(page+1))
	return path + "?" + v.Encode()
}

func seriesLink(device, metric string, page int) string {
	v := url.Values{"device": {device}, "metric": {metric}}
	if page > 0 {
		v.Set("page", strconv.Itoa(page+1))
	}
	return "/series?" + v.Encode()
}

func fileLink(path, file string) string { return path + "?" + url.Values{"file": {file}}.Encode() }

// alertText is an alert in one line: what, how much, where.
func alertText(a history.Alert) string {
	what := "not confirmed (" + a.Verdict + ")"
	if a.Confirmed {
		what = "confirmed " + a.Verdict
	}
	s := fmt.Sprintf("alert %d: %s %s [%s, %s] at %s", a.ID, what, format.SignedPct(a.DeltaPct), format.SignedPct(a.CILowPct),
		format.SignedPct(a.CIHighPct), short(a.Rev))
	if a.FirstBad != "" {
		s += ", first bad " + short(a.FirstBad)
		if a.Author != nil {
			s += " by " + a.Author.Name + " <" + a.Author.Email + ">: " + a.Author.Subject
		}
	}
	if a.Mark != nil {
		s += ", marked " + map[bool]string{true: "real", false: "false"}[a.Mark.Real]
	}
	return s
}

func short(rev string) string { return rev[:min(len(rev), 7)] }

// shortTime is an RFC 3339 time to the minute, in its own zone.
func shortTime(t string) string {
	if tm, err := time.Parse(time.RFC3339, t); err == nil {
		return tm.Format("2006-01-02 15:04")
	}
	return t
}

// pointRow is a build of a series page's table.
type pointRow struct {
	Index                int
	Build, Time, Median  string
	N                    int
	Delta, CI, Verdict   string
	Session, SessionLink string
	Kind                 string
	Step, Alert          bool
}

// alertView is an alert on its series page.
type alertView struct {
	history.Alert
	Text                   string
	Sessions               []linkView
	BisectLink, MarkAction string
	MarkReal, MarkNote     string
}

type linkView struct{ Name, Link string }

// series shows one series: the chart with its change points and alerts,
// the alerts with their confirmations and bisects, the builds newest
// first (paged), each linked to its session.
func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	device, metric := r.URL.Query().Get("device"), r.URL.Query().Get("metric")
	ser, ok, err := s.DB.SeriesOf(ctx, device, metric)
	switch {
	case err != nil:
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	case !ok:
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("the history has no series %q on %q", metric, device))
		return
	}
	values := ser.Values()
	builds := make([]string, len(ser.Points))
	for i, p := range ser.Points {
		builds[i] = p.Build
		if p.Rev != "" {
			builds[i] = short(p.Rev)
		}
	}
	// The detector over the newest builds.
	from := max(0, len(values)-maxDetect)
	var steps []changepoint.Step
	var detectNote string
	if n := len(values) - from; n >= 2*max(s.Detect.MinSegment, 2) {
		steps, err = changepoint.Detect(values[from:], s.Detect)
		if err != nil {
			detectNote = "change points: " + err.Error()
		}
	}
	if from > 0 {
		detectNote = fmt.Sprintf("change points searched over the newest %d of %d builds", maxDetect, len(values))
	}
	var marks []plot.SeriesMark
	isStep := map[int]bool{}
	for _, st := range steps {
		marks = append(marks, plot.SeriesMark{Index: from + st.Index})
		isStep[from+st.Index] = true
	}
	alerts, err := s.alertsOf(ctx, device, metric)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	at := map[string]int{}
	for i, p := range ser.Points {
		if p.Rev != "" {
			at[p.Rev] = i
		}
	}
	isAlert := map[int]bool{}
	var views []alertView
	for _, a := range alerts {
		i, ok := at[a.FirstBad]
		if !ok {
			i, ok = at[a.Rev]
		}
		if ok {
			marks = append(marks, plot.SeriesMark{Index: i, Alert: true, Confirmed: a.Confirmed})
			isAlert[i] = true
		}
		v := alertView{Alert: a, Text: alertText(a), MarkAction: fmt.Sprintf("/alerts/%d/mark", a.ID)}
		v.From, v.To = short(a.From), short(a.To)
		for _, f := range a.Sessions {
			v.Sessions = append(v.Sessions, linkView{baseName(f), fileLink("/session", f)})
		}
		if a.Bisect != "" {
			v.BisectLink = fileLink("/bisect", a.Bisect)
		}
		if a.Mark != nil {
			v.MarkReal = map[bool]string{true: "real", false: "false"}[a.Mark.Real]
			v.MarkNote = a.Mark.Note
		}
		views = append(views, v)
	}
	sort.Slice(views, func(i, j int) bool { return views[i].ID > views[j].ID })
	var chart template.HTML
	title := metric + " on " + device
	if fig, err := plot.Series(title, ser.Unit, values, builds, marks); err == nil {
		var b bytes.Buffer
		if fig.Write(&b, "svg") == nil {
			chart = template.HTML(svgElement(b.String())) // drawn by gonum/plot from numbers
		}
	}
	// The builds, newest first, a page at a time.
	page, pages := pageOf(r, len(ser.Points))
	var rows []pointRow
	for k := page * PageSize; k < min((page+1)*PageSize, len(ser.Points)); k++ {
		i := len(ser.Points) - 1 - k
		p := ser.Points[i]
		row := pointRow{Index: i, Build: p.Build, Time: shortTime(p.RevTime), Median: num(float64(p.Median)), N: p.N, Kind: p.Kind,
			Delta: format.SignedPct(p.DeltaPct), Verdict: p.Verdict, Step: isStep[i], Alert: isAlert[i]}
		if p.Rev != "" && !strings.Contains(p.Build, short(p.Rev)) {
			row.Build = short(p.Rev) + " " + p.Build
		}
		if p.CILowPct.Defined() {
			row.CI = "[" + format.SignedPct(p.CILowPct) + ", " + format.SignedPct(p.CIHighPct) + "]"
		}
		if p.Session != "" {
			row.Session, row.SessionLink = baseName(p.Session), fileLink("/session", p.Session)
		}
		rows = append(rows, row)
	}
	q := r.URL.Query()
	s.render(w, r, seriesTemplate, struct {
		Title, Unit, Note string
		Builds            int
		Chart             template.HTML
		Steps             []string
		Alerts            []alertView
		Rows              []pointRow
		Prev, Next        string
		Page, Pages       int
		CanMark           bool
		Back, Self        string
	}{title, ser.Unit, detectNote, len(values), chart, stepLines(steps, builds, from), views, rows,
		pageLink("/series", q, page-1, pages), pageLink("/series", q, page+1, pages), page + 1, pages, s.Token != "", "/",
		seriesLink(device, metric, page)})
}

// stepLines words the change points.
func stepLines(steps []changepoint.Step, builds []string, from int) []string {
	var out []string
	for _, st := range steps {
		i := from + st.Index
		name := fmt.Sprintf("#%d", i)
		if i < len(builds) {
			name = builds[i] + " (#" + strconv.Itoa(i) + ")"
		}
		out = append(out, fmt.Sprintf("step at %s: %s (p %.2g)", name, format.SignedPct(st.DeltaPct), st.P))
	}
	return out
}

func (s *Server) alertsOf(ctx context.Context, device, metric string) ([]history.Alert, error) {
	all, err := s.DB.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var out []history.Alert
	for _, a := range all {
		if a.Device == device && a.Metric == metric {
			out = append(out, a)
		}
	}
	return out, nil
}

// session shows a session the history names as its report page.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	file, ok := s.known(w, r)
	if !ok {
		return
	}
	var b bytes.Buffer
	if err := s.Session(&b, file); err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Sprintf("session %s: %v", file, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// bisect shows a bisect record the history names.
func (s *Server) bisect(w http.ResponseWriter, r *http.Request) {
	file, ok := s.known(w, r)
	if !ok {
		return
	}
	text, err := s.Bisect(file)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Sprintf("bisect %s: %v", file, err))
		return
	}
	s.render(w, r, textTemplate, struct{ Title, Text string }{"bisect " + baseName(file), text})
}

// known is the ?file= of r when the history names it; else it answers
// 404 (a file the history does not name is never read).
func (s *Server) known(w http.ResponseWriter, r *http.Request) (string, bool) {
	file := r.URL.Query().Get("file")
	ok, err := s.DB.Knows(r.Context(), file)
	switch {
	case err != nil:
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return "", false
	case file == "" || !ok:
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("the history names no file %q", file))
		return "", false
	}
	return file, true
}

// mark records a person's verdict on an alert: the one write, which needs
// the token (the guard checked it when one is set; without one, marking
// is off).
func (s *Server) mark(w http.ResponseWriter, r *http.Request) {
	if s.Token == "" {
		s.fail(w, r, http.StatusForbidden, "marking alerts needs perflab serve --token")
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.fail(w, r, http.StatusNotFound, "no alert "+r.PathValue("id"))
		return
	}
	real := r.FormValue("real")
	if real != "real" && real != "false" {
		s.fail(w, r, http.StatusBadRequest, `want real=real or real=false`)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := s.DB.MarkAlert(ctx, id, real == "real", strings.TrimSpace(r.FormValue("note"))); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, history.ErrNoAlert) {
			code = http.StatusNotFound
		}
		s.fail(w, r, code, err.Error())
		return
	}
	back := r.FormValue("back")
	if !strings.HasPrefix(back, "/series?") {
		back = "/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

func baseName(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return path[i+1:]
	}
	return path
}

func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf("%.4g", x)
}

// svgElement is the <svg> element of an SVG document.
func svgElement(doc string) string {
	if i := strings.Index(doc, "<svg"); i >= 0 {
		return doc[i:]
	}
	return ""
}

// sparkline draws values as a w×h SVG polyline (no axes: the list's
// small chart), its last point marked.
func sparkline(values []float64, w, h int) template.HTML {
	var xs []float64
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			xs = append(xs, v)
		}
	}
	if len(xs) < 2 {
		return ""
	}
	lo, hi := xs[0], xs[0]
	for _, v := range xs {
		lo, hi = min(lo, v), max(hi, v)
	}
	span := hi - lo
	if span == 0 {
		span = 1
	}
	var pts []string
	var lx, ly float64
	for i, v := range xs {
		lx = 2 + float64(i)*float64(w-4)/float64(len(xs)-1)
		ly = 2 + (1-(v-lo)/span)*float64(h-4)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", lx, ly))
	}
	return template.HTML(fmt.Sprintf(`<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="last %d builds"><polyline fill="none" stroke="#0072b2" stroke-width="1.2" points="%s"/><circle cx="%.1f" cy="%.1f" r="2" fill="#0072b2"/></svg>`,
		w, h, w, h, len(xs), strings.Join(pts, " "), lx, ly))
}
