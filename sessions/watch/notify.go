package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/history"
)

// ReportFormat names the alerts document (files and webhook payload).
const ReportFormat = "perflab-alerts"

// Report is what a watch sends out about its alerts: the JSON file, the
// Markdown file and the webhook's payload.
type Report struct {
	Format     string `json:"format"`
	Version    int    `json:"version"`
	Repo       string `json:"repo"`
	Experiment string `json:"experiment"`
	History    string `json:"history"`
	// Regressions counts the confirmed regressions among Alerts.
	Regressions int `json:"regressions"`
	// Alerts are the alerts raised in this run of perflab watch,
	// confirmed or not.
	Alerts []history.Alert `json:"alerts"`
}

// NewReport wraps alerts.
func NewReport(repo, experiment, historyFile string, alerts []history.Alert) Report {
	r := Report{Format: ReportFormat, Version: 1, Repo: repo, Experiment: experiment, History: historyFile, Alerts: alerts}
	if r.Alerts == nil {
		r.Alerts = []history.Alert{}
	}
	for _, a := range alerts {
		if a.Regression() {
			r.Regressions++
		}
	}
	return r
}

// Check refuses a file WriteFile cannot write (by its extension).
func (Report) Check(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json", ".md", ".markdown":
		return nil
	}
	return fmt.Errorf("--alerts %s: want a .json or .md file", path)
}

// WriteFile writes the report to path: JSON for .json, Markdown for .md.
func (r Report) WriteFile(path string) error {
	if err := r.Check(path); err != nil {
		return err
	}
	var data []byte
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		var err error
		if data, err = json.MarshalIndent(r, "", "  "); err != nil {
			return err
		}
		data = append(data, '\n')
	default:
		data = []byte(r.Markdown())
	}
	return os.WriteFile(path, data, 0o644)
}

// Markdown is the report as a Markdown page (for a CI job's summary).
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# perflab watch: %d %s, %d confirmed %s\n\n", len(r.Alerts), sessions.Plural(len(r.Alerts), "alert"),
		r.Regressions, sessions.Plural(r.Regressions, "regression"))
	fmt.Fprintf(&b, "Repository `%s`, experiment `%s`, history `%s`.\n\n", r.Repo, r.Experiment, r.History)
	if len(r.Alerts) == 0 {
		b.WriteString("No new step.\n")
		return b.String()
	}
	b.WriteString("| alert | series | step at | first bad | author | confirmed | verdict | Δ (confirmation) | CI | detector Δ | range | sessions |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, a := range r.Alerts {
		conf := "no"
		if a.Confirmed {
			conf = "**yes**"
		}
		author := "-"
		if a.Author != nil {
			author = fmt.Sprintf("%s &lt;%s&gt;: %s", format.MarkdownCell(a.Author.Name), format.MarkdownCell(a.Author.Email), format.MarkdownCell(a.Author.Subject))
		}
		fmt.Fprintf(&b, "| %d | %s | `%s` | `%s` | %s | %s | %s | %s | [%s, %s] | %s | `%s..%s` | %s |\n", a.ID, a.Series, short(a.Rev), short(a.FirstBad),
			author, conf, a.Verdict, format.SignedPct(a.DeltaPct), format.SignedPct(a.CILowPct), format.SignedPct(a.CIHighPct),
			format.SignedPct(a.DetectedPct), short(a.From), short(a.To), strings.Join(append(append([]string{}, a.Sessions...), a.Bisect), "<br>"))
	}
	return b.String()
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	if rev == "" {
		return "-"
	}
	return rev
}

// Webhook posts reports to a URL. A failing post is retried a few times
// and logged; it never stops the watch. Post runs in the background; Wait
// waits for the posts in flight.
type Webhook struct {
	URL string
	// Attempts and Backoff: each failed post waits Backoff, doubled each
	// time, before the next of Attempts (defaults 3 and 1 s).
	Attempts int
	Backoff  time.Duration
	Client   *http.Client
	Logf     func(format string, args ...any)
	done     chan struct{}
	pending  int
}

// Post sends r in the background.
func (h *Webhook) Post(ctx context.Context, r Report) {
	if h.done == nil {
		h.done = make(chan struct{}, 64)
	}
	h.pending++
	go func() {
		defer func() { h.done <- struct{}{} }()
		if err := h.post(ctx, r); err != nil && h.Logf != nil {
			h.Logf("webhook %s: %v (the alerts are in the history: perflab history alerts)", h.URL, err)
		}
	}()
}

// Wait waits for every post in flight.
func (h *Webhook) Wait() {
	for ; h.pending > 0; h.pending-- {
		<-h.done
	}
}

func (h *Webhook) post(ctx context.Context, r Report) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	attempts, backoff, client := h.Attempts, h.Backoff, h.Client
	if attempts <= 0 {
		attempts = 3
	}
	if backoff <= 0 {
		backoff = time.Second
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	var last error
	for i := range attempts {
		if i > 0 {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return ctx.Err()
			}
			backoff *= 2
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			last = err
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			return nil
		}
		last = fmt.Errorf("%s", resp.Status)
	}
	return fmt.Errorf("%d attempts failed, the last: %w", attempts, last)
}
