package cli

import (
	"fmt"
	"io"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/plot"
)

// plotSession draws a session and its comparisons (one, or one per build
// after the base) to path (.svg or .png).
func plotSession(path string, s *sessions.Session, reps []analysis.Report) error {
	f, err := plot.SessionVersus(s, reps)
	if err != nil {
		return err
	}
	return f.Save(path)
}

// savePlot draws f to path unless path is empty, saying where on stderr;
// it reports false (after printing why) when the file cannot be written.
func savePlot(path string, f *plot.Figure, cmd string, stderr io.Writer) bool {
	if path == "" {
		return true
	}
	if err := f.Save(path); err != nil {
		fmt.Fprintf(stderr, "perflab %s: %v\n", cmd, err)
		return false
	}
	fmt.Fprintf(stderr, "perflab %s: plot written to %s\n", cmd, path)
	return true
}
