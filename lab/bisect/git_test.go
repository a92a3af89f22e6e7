package bisect

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestGitRange(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	for _, msg := range []string{"one", "two", "three"} {
		os.WriteFile(filepath.Join(repo, "f"), []byte(msg), 0o644)
		git("add", ".")
		git("commit", "-q", "-m", msg)
	}
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
