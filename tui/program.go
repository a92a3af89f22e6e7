package tui

import (
	"context"
	"errors"
	"io"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// Screen is the terminal a full-screen view draws on: its input (nil for
// stdin) and output (nil for stdout), and NoColor for plain ASCII output
// (NO_COLOR set).
type Screen struct {
	In      io.Reader
	Out     io.Writer
	NoColor bool
}

// Run shows m (the workbench, the bisect screen) on s until it quits or
// ctx ends. It keeps Bubble Tea inside tui: the commands hand over a
// model and a screen. Quitting by interrupt or kill is not an error.
func Run(ctx context.Context, m tea.Model, s Screen) error {
	opts := []tea.ProgramOption{tea.WithContext(ctx)}
	if s.In != nil {
		opts = append(opts, tea.WithInput(s.In))
	}
	if s.Out != nil {
		opts = append(opts, tea.WithOutput(s.Out))
	}
	if s.NoColor {
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	_, err := tea.NewProgram(m, opts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, tea.ErrInterrupted) {
		return nil
	}
	return err
}
