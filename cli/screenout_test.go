package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPickScreenPlace: where a screen draws for each combination of
// terminals (issue 29: bisect --tui > out.txt failed with "needs a
// terminal"; the screen goes to the terminal, stdout keeps the table).
func TestPickScreenPlace(t *testing.T) {
	names := map[screenPlace]string{placeNone: "none", placeStdout: "stdout", placeTTY: "tty", placeStderr: "stderr"}
	for _, tc := range []struct {
		stdin, stdout, stderr, asked, tty bool
		want                              screenPlace
	}{
		{true, true, true, false, true, placeStdout},    // a terminal: as before
		{false, true, false, false, false, placeStdout}, // stdout alone is enough
		{true, false, true, false, true, placeTTY},      // > out.txt at a terminal
		{true, false, true, false, false, placeStderr},  // … without /dev/tty
		{false, false, true, false, true, placeNone},    // input from a pipe: a script
		{true, false, false, false, true, placeNone},    // 2> err.txt too: a script
		{false, false, false, true, true, placeTTY},     // --tui: any terminal
		{false, false, true, true, false, placeNone},    // --tui, stdin not a terminal, no tty
		{true, false, true, true, false, placeStderr},   // --tui without /dev/tty
		{false, false, false, true, false, placeNone},   // --tui, no terminal at all
		{false, false, false, false, false, placeNone},  // CI
	} {
		got := pickScreenPlace(tc.stdin, tc.stdout, tc.stderr, tc.asked, tc.tty)
		if got != tc.want {
			t.Errorf("stdin %v stdout %v stderr %v asked %v tty %v: %s, want %s",
				tc.stdin, tc.stdout, tc.stderr, tc.asked, tc.tty, names[got], names[tc.want])
		}
	}
}

// TestBisectScreenWithRedirectedStdout: at a terminal (tmux), bisect
// --tui > table.txt draws its screen on the terminal and writes the
// result table to the file.
func TestBisectScreenWithRedirectedStdout(t *testing.T) {
	t.Parallel()
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	table := filepath.Join(dir, "table.txt")
	p := newTmuxPane(t, 80, 24, fmt.Sprintf("env XDG_DATA_HOME=%s XDG_CONFIG_HOME=%s NO_COLOR=1 %s bisect %s --tui --dir %s --out %s > %s; echo PERFLAB-EXIT=$?",
		dir, dir, bin, writeRange(t, 4, 2, 3), dir, filepath.Join(dir, "b.json"), table))
	p.waitText("done · q quits", runWait)
	if s := p.screen(); !strings.Contains(s, "bisect of 4 builds") {
		t.Errorf("no bisect screen on the terminal:\n%s", s)
	}
	p.keys("q")
	s := p.waitFor("the exit", screenWait, func(s string) bool { return regexp.MustCompile(`PERFLAB-EXIT=\d`).MatchString(s) })
	if strings.Contains(s, "needs a terminal") || !strings.Contains(s, "bisect saved:") {
		t.Errorf("the terminal after the screen:\n%s", s)
	}
	out, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "first bad: build 2") || strings.Contains(string(out), "\x1b") {
		t.Errorf("stdout's file is not the result table:\n%q", out)
	}
}
