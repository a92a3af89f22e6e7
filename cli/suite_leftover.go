package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/perflab/perflab/lab/governor"
)

// suiteTmpPrefix names a suite's temporary folder: its two worktrees
// (base, head) and the bundle of test binaries.
const suiteTmpPrefix = "perflab-suite-"

// suiteOwnerFile, in a suite's temporary folder, names the perflab that
// made it (governor.OwnerTag), which holds an flock on it for as long as
// it runs, so that a later perflab suite can tell the folder of one killed
// (SIGKILL, power loss) from one still running.
const suiteOwnerFile = "owner"

// markSuiteTmp writes the owner file into a new suite folder and locks
// it; closing the file lets it go.
func markSuiteTmp(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, suiteOwnerFile), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if _, err := f.WriteString(governor.OwnerTag() + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// suiteTmpGone reports whether dir is a suite folder whose perflab is
// gone, and that perflab's pid: made on this host (a folder shared with
// other hosts is theirs to clean), its process ended, and its owner file
// unlocked. A folder without an owner file (being made, or made before
// owner files) is never taken for gone.
func suiteTmpGone(dir string) (pid int, gone bool) {
	if !strings.HasPrefix(filepath.Base(dir), suiteTmpPrefix) {
		return 0, false
	}
	path := filepath.Join(dir, suiteOwnerFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	r, ok := governor.ParseOwnerTag(strings.TrimSpace(string(b)))
	if host, _ := os.Hostname(); !ok || r.Host != host || !r.Gone() {
		return 0, false
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return 0, false // its perflab still runs (in another PID namespace)
	}
	return r.PID, true
}

// removeSuiteLeftovers removes what killed perflab suites left: their
// worktrees registered in the repository at top (git worktree remove), and
// their folders in the temporary directory. Each removal is said on
// stderr; a removal that fails is said and skipped.
func removeSuiteLeftovers(ctx context.Context, top string, stderr io.Writer) {
	out, err := exec.CommandContext(ctx, "git", "-C", top, "worktree", "list", "--porcelain").Output()
	if err != nil {
		return
	}
	folders := map[string]int{} // leftover folder → its perflab's pid
	var trees []string
	for _, line := range strings.Split(string(out), "\n") {
		wt, ok := strings.CutPrefix(line, "worktree ")
		if !ok {
			continue
		}
		if pid, gone := suiteTmpGone(filepath.Dir(wt)); gone {
			folders[filepath.Dir(wt)] = pid
			trees = append(trees, wt)
		}
	}
	for _, wt := range trees {
		if msg, err := exec.CommandContext(ctx, "git", "-C", top, "worktree", "remove", "--force", wt).CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "perflab suite: could not remove the worktree %s a killed perflab suite left: %v: %s\n", wt, err, strings.TrimSpace(string(msg)))
		}
	}
	defer func() {
		if len(trees) > 0 {
			// Worktrees whose removal failed lose their folder below:
			// their entries go too.
			exec.CommandContext(ctx, "git", "-C", top, "worktree", "prune").Run()
		}
	}()
	if matches, err := filepath.Glob(filepath.Join(os.TempDir(), suiteTmpPrefix+"*")); err == nil {
		for _, dir := range matches {
			if pid, gone := suiteTmpGone(dir); gone {
				folders[dir] = pid
			}
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(folders)) {
		pid := folders[dir]
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(stderr, "perflab suite: could not remove %s, left by a killed perflab suite (pid %d): %v\n", dir, pid, err)
			continue
		}
		fmt.Fprintf(stderr, "perflab suite: removed %s and its worktrees, left by a perflab suite (pid %d) that was killed\n", dir, pid)
	}
}
