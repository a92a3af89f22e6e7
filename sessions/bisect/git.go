package bisect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/shquote"
)

// GitRange is a range of commits to bisect: the first-parent history from
// Good to Bad in the repository Dir. Each commit a comparison needs is
// checked out into its own worktree under Cache and built there once by
// Build (sh -c, with $PERFLAB_REV and $PERFLAB_OUT); builds are cached by
// commit across runs. Run is the trial command (sh -c) with {out} replaced
// by the commit's output directory; for phones, APK instead names the APK
// the build yields ({out} replaced likewise).
type GitRange struct {
	Dir, Good, Bad string
	Build, Run     string
	APK            string
	// Cache holds the worktrees and outputs; default
	// $XDG_CACHE_HOME/perflab/bisect/<repo hash> (~/.cache when unset).
	Cache string
}

// Candidates lists Good, then every first-parent commit after it up to
// Bad, oldest first, named by short hash and subject.
func (g *GitRange) Candidates(ctx context.Context) ([]Candidate, error) {
	if g.Cache == "" {
		c, err := DefaultCache(g.Dir)
		if err != nil {
			return nil, err
		}
		g.Cache = c
	}
	// git runs with -C DIR: a relative cache would land inside the repository.
	abs, err := filepath.Abs(g.Cache)
	if err != nil {
		return nil, err
	}
	g.Cache = abs
	good, err := g.git(ctx, "rev-parse", "--verify", "--end-of-options", g.Good+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("--good %s: %w", g.Good, err)
	}
	bad, err := g.git(ctx, "rev-parse", "--verify", "--end-of-options", g.Bad+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("--bad %s: %w", g.Bad, err)
	}
	if _, err := g.git(ctx, "merge-base", "--is-ancestor", good, bad); err != nil {
		return nil, fmt.Errorf("--good %s is not an ancestor of --bad %s", g.Good, g.Bad)
	}
	list, err := g.git(ctx, "log", "--first-parent", "--reverse", "--format=%H %h %s", good+".."+bad)
	if err != nil {
		return nil, err
	}
	first, err := g.git(ctx, "log", "-1", "--format=%H %h %s", good)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	for _, line := range strings.Split(first+"\n"+list, "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		for len(f) < 3 {
			f = append(f, "")
		}
		out = append(out, Candidate{Name: strings.TrimSpace(f[1] + " " + f[2]), Rev: f[0]})
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("--good %s and --bad %s are the same commit: nothing to bisect", g.Good, g.Bad)
	}
	return out, nil
}

// DefaultCache is where a repository's worktrees and builds are kept
// unless told: $XDG_CACHE_HOME/perflab/bisect/<repo>-<hash> (~/.cache when
// unset); perflab watch shares it, so a commit is built once for both.
func DefaultCache(repo string) (string, error) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory for the build cache (give --cache): %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "perflab", "bisect", filepath.Base(abs)+"-"+hex.EncodeToString(sum[:6])), nil
}

// Resolve builds candidate c's commit (once: a built commit is reused)
// and returns the local build that runs it. Call Candidates first.
func (g *GitRange) Resolve(ctx context.Context, c Candidate) (lab.Build, error) {
	rev := c.Rev
	wt := filepath.Join(g.Cache, rev, "src")
	out := filepath.Join(g.Cache, rev, "out")
	marker := filepath.Join(g.Cache, rev, "built")
	logf := filepath.Join(g.Cache, rev, "build.log")
	env := map[string]string{"PERFLAB_REV": rev, "PERFLAB_OUT": out}
	b := lab.Build{Name: c.Name, Command: []string{"sh", "-c", strings.ReplaceAll(g.Run, "{out}", shquote.Quote(out))},
		Dir: wt, Env: env}
	if g.APK != "" {
		b = lab.Build{Name: c.Name, APK: strings.ReplaceAll(g.APK, "{out}", out)}
	}
	if _, err := os.Stat(marker); err == nil {
		return b, nil
	}
	if err := os.MkdirAll(filepath.Join(g.Cache, rev), 0o755); err != nil {
		return lab.Build{}, err
	}
	// A worktree left by an interrupted build is made again from scratch.
	if _, err := os.Stat(wt); err == nil {
		g.git(ctx, "worktree", "remove", "--force", wt)
		os.RemoveAll(wt)
		g.git(ctx, "worktree", "prune")
	}
	os.RemoveAll(out)
	if _, err := g.git(ctx, "worktree", "add", "--detach", wt, rev); err != nil {
		return lab.Build{}, fmt.Errorf("checkout %s: %w", rev, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return lab.Build{}, err
	}
	if g.Build != "" {
		cmd := exec.CommandContext(ctx, "sh", "-c", g.Build)
		cmd.Dir = wt
		cmd.Env = append(os.Environ(), "PERFLAB_REV="+rev, "PERFLAB_OUT="+out)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		os.WriteFile(logf, buf.Bytes(), 0o644)
		if err != nil {
			return lab.Build{}, fmt.Errorf("--build at %s: %w (log %s):\n%s", rev, err, logf, tail(buf.String(), 2000))
		}
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return lab.Build{}, err
	}
	return b, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// git runs git in the repository and returns its trimmed output.
func (g *GitRange) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", g.Dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return "", err
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}
