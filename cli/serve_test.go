package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeCommand: off loopback without a token is refused; with no
// history it says so; on a free loopback port it serves the history's
// list until its context ends, and a generated token is asked for.
func TestServeCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"serve", "--listen", "0.0.0.0:0", "--history", db}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "give --token TOKEN") {
		t.Errorf("off loopback: exit %d %s", code, errb.String())
	}
	errb.Reset()
	if code := Main(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--history", db}, &out, &errb); code != exitError ||
		!strings.Contains(errb.String(), "no history at") {
		t.Errorf("no history: exit %d %s", code, errb.String())
	}
	if code := Main(context.Background(), []string{"history", "import", "--history", db, "cli/testdata/sim-effect.jsonl"}, &out, &errb); code != exitOK {
		t.Fatalf("import: %d %s", code, errb.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var sout syncBuffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--history", db, "--token", "generate"}, &sout, io.Discard)
	}()
	link := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+`)
	deadline := time.Now().Add(time.Minute)
	for !link.MatchString(sout.String()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	u := link.FindString(sout.String())
	if u == "" {
		t.Fatalf("no link in %q", sout.String())
	}
	base, _, _ := strings.Cut(u, "?")
	if resp, err := http.Get(base); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %v %v", resp, err)
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).Get(u) // the link sets the cookie
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "startup_ms") {
		t.Errorf("with the token: %d\n%s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("serve ended with %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop with its context")
	}
}
