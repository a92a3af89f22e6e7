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

	"github.com/perflab/perflab/lab/governor"
)

// suiteTmpPrefix names a suite's temporary folder: its two worktrees
// (base, head) and the bundle of test binaries.
const suiteTmpPrefix = "perflab-suite-"

// suiteOwnerFile, in a suite's temporary folder, names the perflab that
// made it (governor.OwnerTag), so that a later perflab suite can tell the
// folder of one killed (SIGKILL, a closed terminal's pipe, power loss)
// from one still running.
const suiteOwnerFile = "owner"

// markSuiteTmp writes the owner file into a new suite folder.
func markSuiteTmp(dir string) error {
	return os.WriteFile(filepath.Join(dir, suiteOwnerFile), []byte(governor.OwnerTag()+"\n"), 0o600)
}

// suiteTmpGone reports whether dir is a suite folder whose perflab is
// gone, and that perflab's pid. A folder without an owner file (being
// made, or made before owner files) is never taken for gone.
func suiteTmpGone(dir string) (pid int, gone bool) {
	if !strings.HasPrefix(filepath.Base(dir), suiteTmpPrefix) {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(dir, suiteOwnerFile))
	if err != nil {
		return 0, false
	}
	r, ok := governor.ParseOwnerTag(strings.TrimSpace(string(b)))
	if !ok || !r.Gone() {
		return 0, false
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
