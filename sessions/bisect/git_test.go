package bisect

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/perflab/perflab/internal/gittest"
)

func TestGitRange(t *testing.T) {
	r := gittest.New(t)
	for _, msg := range []string{"one", "two", "three"} {
		r.Commit(msg, map[string]string{"f": msg})
	}
	repo := r.Dir
	ctx := context.Background()
	g := &GitRange{Dir: repo, Good: "HEAD~2", Bad: "HEAD", Build: `cp f "$PERFLAB_OUT/app.apk"`, APK: "{out}/app.apk", Cache: t.TempDir()}
	cands, err := g.Candidates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 3 || !strings.HasSuffix(cands[0].Name, " one") || !strings.HasSuffix(cands[2].Name, " three") || len(cands[1].Rev) != 40 {
		t.Fatalf("candidates %+v", cands)
	}
	b, err := g.Resolve(ctx, cands[1])
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(b.APK); err != nil || string(data) != "two" {
		t.Errorf("APK %s: %q, %v; want the second commit's file", b.APK, data, err)
	}
	// Reversed range, and a failing build, are errors that say so.
	if _, err := (&GitRange{Dir: repo, Good: "HEAD", Bad: "HEAD~2", Cache: g.Cache}).Candidates(ctx); err == nil || !strings.Contains(err.Error(), "not an ancestor") {
		t.Errorf("reversed range: %v", err)
	}
	g.Build = "echo broken >&2; exit 1"
	if _, err := g.Resolve(ctx, cands[2]); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("failing build: %v", err)
	}
}
