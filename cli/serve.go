package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/page"
	"github.com/perflab/perflab/sessions/web"
)

const serveUsage = `Usage: perflab serve [--history FILE] [--listen ADDR] [--token TOKEN]

A read-only web dashboard over a results history and its sessions, for the
people an alert reaches: the series listed with the newest alerts first,
each with a small chart of its last builds; a series page with its builds
over the commits, the change points and alerts marked, each alert's
confirmation A/B and bisect, and a link to every build's session; a
session page that is perflab report as a web page (perflab report --html).
Pages are drawn on the server (HTML and SVG, no script) and read one
series at a time, so a history of a million rows pages as fast as a small
one. An unknown series or session is a 404 page.

--listen is 127.0.0.1:8080 by default. Listening on anything but loopback
needs --token: every request must then carry it, as a bearer token
(Authorization: Bearer TOKEN) or the cookie that the link
http://HOST:PORT/?token=TOKEN sets. Marking an alert real or false on its
series page, the only write, needs the token too (--token generate makes
one and prints the link).

Exit status: 0 stopped (Ctrl-C); 1 error (the history, the address); 2 usage.

Examples:
  perflab serve                                   # http://127.0.0.1:8080/
  perflab serve --history team.db --listen 127.0.0.1:9000
  perflab serve --listen 0.0.0.0:8080 --token generate

Manual: docs/dashboard.md (a team's setup), docs/history.md (the dashboard)

Flags:
`

// cmdServe serves the dashboard until ctx ends.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	file := fs.String("history", "", "the history: a `FILE`, or postgres://USER@HOST/DB (default $PERFLAB_HISTORY, else $XDG_DATA_HOME/perflab/history.db)")
	listen := fs.String("listen", "127.0.0.1:8080", "the `ADDR`ess to listen on (HOST:PORT; port 0 picks a free one)")
	token := fs.String("token", "", "a `TOKEN` every request must carry; generate makes one (needed off loopback, and to mark alerts)")
	pos, code, ok := parseCommandFlags(fs, args, serveUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintln(stderr, "perflab serve: takes no arguments (--history FILE names the history)")
		return exitUsage
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "perflab serve: --listen %q: %v (want HOST:PORT, e.g. 127.0.0.1:8080)\n", *listen, err)
		return exitUsage
	}
	if *token == "generate" {
		b := make([]byte, 18)
		rand.Read(b)
		*token = hex.EncodeToString(b)
	}
	if !loopback(host) && *token == "" {
		fmt.Fprintf(stderr, "perflab serve: --listen %s is reachable from other machines: give --token TOKEN (or --token generate)\n", *listen)
		return exitUsage
	}
	db, err := openHistory(ctx, &historyOpts{file: *file}, false)
	if err != nil {
		fmt.Fprintln(stderr, "perflab serve:", err)
		return exitError
	}
	defer db.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, "perflab serve:", err)
		return exitError
	}
	srv := &web.Server{DB: db, Token: *token, Session: sessionPage, Bisect: bisectText,
		Detect: changepoint.Options{MinSegment: changepoint.DefaultMinSegment, Alpha: changepoint.DefaultAlpha, MinEffect: changepoint.DefaultMinEffect},
		Logf:   func(format string, args ...any) { fmt.Fprintf(stderr, "perflab serve: "+format+"\n", args...) }}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	link := "http://" + ln.Addr().String() + "/"
	if *token != "" {
		link += "?token=" + *token
	}
	fmt.Fprintf(stdout, "perflab serve: history %s at %s (Ctrl-C stops)\n", db.Path(), link)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintln(stderr, "perflab serve:", err)
		return exitError
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "perflab serve:", err)
	}
	return exitOK
}

// loopback reports whether host is a loopback address or localhost.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sessionPage renders a session as perflab report --html does.
func sessionPage(w io.Writer, path string) error {
	s, err := sessions.Load(path)
	if err != nil {
		return err
	}
	plan := &s.Header.Plan
	opt := engine.Options(plan)
	events, rr, err := regimeEvents(s.Events, "", opt, plan.Suite != nil)
	if err != nil {
		return err
	}
	rep := engine.Analyse(plan, sessions.ArmInputs(events, len(plan.ArmKeys())), opt)
	rep.Warn(rr.warnings...)
	in := page.Input{Session: s, Reports: rep.Reports(), Lines: append(rr.list, rr.order...)}
	fillPage(&in, path)
	return page.HTML(w, in)
}

// bisectText is a bisect record as perflab bisect --show prints it.
func bisectText(path string) (string, error) {
	rec, err := bisect.Load(path)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	printBisect(&b, &b, rec, false)
	return b.String(), nil
}
