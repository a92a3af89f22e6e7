package cli

import (
	"errors"
	"io"
	"os"

	"github.com/perflab/perflab/tui"
)

// Where a full-screen view (the workbench, the bisect screen) draws
// (issue 29: `perflab bisect --tui > out.txt` failed with "needs a
// terminal"): on stdout when it is a terminal; else on the terminal the
// user sits at, when there is one, while stdout keeps what a command
// prints at the end (the table), as `watch and keep`.

// screenPlace is where a screen draws.
type screenPlace int

const (
	placeNone   screenPlace = iota // no terminal to draw on
	placeStdout                    // stdout is the terminal
	placeTTY                       // the controlling terminal, /dev/tty
	placeStderr                    // stderr, a terminal (with stdin one)
)

// pickScreenPlace decides where a screen draws from which of stdin,
// stdout and stderr are terminals, whether the screen was asked for
// (--tui: then any terminal will do) and whether /dev/tty opens. Without
// the ask a redirected stdout draws elsewhere only when stdin and stderr
// are terminals (a user at a terminal who redirected the output): a
// script's run, its stderr captured too, stays headless.
func pickScreenPlace(stdinTTY, stdoutTTY, stderrTTY, asked, ttyOpens bool) screenPlace {
	switch {
	case stdoutTTY:
		return placeStdout
	case !asked && !(stdinTTY && stderrTTY):
		return placeNone
	case ttyOpens:
		return placeTTY
	case stdinTTY && stderrTTY:
		return placeStderr
	}
	return placeNone
}

// screenTerm is the terminal a screen was given: where it draws (input
// and output, NoColor left to the caller) and what to close after.
type screenTerm struct {
	place  screenPlace
	screen tui.Screen
	close  func()
}

// elsewhere reports whether the screen draws off stdout, which then
// takes the final output.
func (s screenTerm) elsewhere() bool { return s.place == placeTTY || s.place == placeStderr }

// errNoTerminal is the refusal when no terminal can show a screen.
var errNoTerminal = errors.New("needs a terminal: stdout is not one, and no terminal could be opened")

// openScreen picks where a screen draws for this process's stdin and
// stdout, stderr (asked: --tui), opening /dev/tty when it is needed.
func openScreen(stdout, stderr io.Writer, asked bool) (screenTerm, error) {
	var tty *os.File
	ttyOpens := func() bool {
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return false
		}
		tty = f
		return true
	}
	stdoutTTY, stderrTTY, stdinTTY := isTerminal(stdout), isTerminal(stderr), isTerminal(os.Stdin)
	var place screenPlace
	if stdoutTTY || asked || (stdinTTY && stderrTTY) {
		// Open /dev/tty only when stdout is not the screen.
		place = pickScreenPlace(stdinTTY, stdoutTTY, stderrTTY, asked, !stdoutTTY && ttyOpens())
	}
	st := screenTerm{place: place, close: func() {}}
	switch place {
	case placeNone:
		return st, errNoTerminal
	case placeTTY:
		st.screen = tui.Screen{In: tty, Out: tty}
		st.close = func() { tty.Close() }
	case placeStderr:
		st.screen = tui.Screen{Out: stderr}
	}
	if tty != nil && place != placeTTY {
		tty.Close()
	}
	return st, nil
}
