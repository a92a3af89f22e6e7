// Package gittest creates throwaway git repositories for tests.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Repo is a git repository in a test's temporary directory.
type Repo struct {
	Dir string
	t   testing.TB
}

// New creates an empty repository on branch main; the test is skipped
// when git is not installed.
func New(t testing.TB) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	r := &Repo{Dir: t.TempDir(), t: t}
	r.Git("init", "-q", "-b", "main")
	return r
}

// Git runs git in the repository, failing the test on error.
func (r *Repo) Git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.Dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// Commit writes files (name → content) and commits them with msg.
func (r *Repo) Commit(msg string, files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.Dir, name), []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.Git("add", ".")
	r.Git("commit", "-q", "-m", msg)
}
