package watch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWebhookRetries: a failing webhook is tried again, and one that
// keeps failing is logged, not returned to the watch.
func TestWebhookRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int // the server's answers in turn (the last repeats)
		hits     int
		logged   bool
	}{
		{"ok at once", []int{200}, 1, false},
		{"ok at the third", []int{500, 503, 204}, 3, false},
		{"never ok", []int{500}, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			hits := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("%s with %q", r.Method, r.Header.Get("Content-Type"))
				}
				w.WriteHeader(tt.statuses[min(hits, len(tt.statuses)-1)])
				hits++
			}))
			defer srv.Close()
			var logs []string
			h := &Webhook{URL: srv.URL, Backoff: time.Millisecond, Logf: func(f string, a ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}}
			h.Post(context.Background(), NewReport("repo", "exp.json", "h.db", nil))
			h.Wait()
			mu.Lock()
			defer mu.Unlock()
			if hits != tt.hits || (len(logs) > 0) != tt.logged {
				t.Errorf("hits %d, logs %q; want %d hits, logged %v", hits, logs, tt.hits, tt.logged)
			}
		})
	}
}

func TestLoadExperimentErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`{"device": "sim:pixel", "watch": {"bild": "make"}}`, `watch: json: unknown field "bild"`},
		{`{"device": "sim:pixel", "watch": {"build": "make"}}`, "perflab-sim.json is its build"},
		{`{"device": "local"}`, `watch: on local give "run"`},
		{`{"device": "local", "watch": {"run": "a", "apk": "b"}}`, "not both"},
		{`{"device": "sim:pixel", "order": "fixed"}`, `order: "fixed"`},
		{`{"device": "sim:pixel", "builds": {"treatment": {"app": "feed"}}}`, `builds.treatment: perflab watch takes only "control"`},
		{`{"device": "sim:pixel", "trials": "ten"}`, "trials"},
		{"{\"device\": \"sim:pixel\",\n\"seed\": }", "line 2"},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "w.json")
		os.WriteFile(path, []byte(tt.doc), 0o644)
		_, err := LoadExperiment(path)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v; want the file and %q", tt.doc, err, tt.want)
		}
	}
	path := filepath.Join(t.TempDir(), "w.json")
	os.WriteFile(path, []byte(`{"device": "local", "builds": {"control": {"command": ["./app"]}}, "watch": {"build": "make", "run": "{out}/app"}}`), 0o644)
	l, err := LoadExperiment(path)
	if err != nil || l.Reference == nil || l.Reference.Dir != filepath.Dir(path) || l.Spec.Run != "{out}/app" || l.Experiment.Builds != nil {
		t.Errorf("a local watch with a reference: %+v, %v", l, err)
	}
}
