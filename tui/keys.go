package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// globalKeys work on every screen.
type globalKeys struct {
	Help key.Binding
	Quit key.Binding
	Back key.Binding
}

func newGlobalKeys() globalKeys {
	return globalKeys{
		Help: key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit: key.NewBinding(key.WithKeys("ctrl+c", "q"), key.WithHelp("q", "quit")),
		Back: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	}
}

// listKeys move a cursor through a list.
type listKeys struct {
	Up   key.Binding
	Down key.Binding
}

func newListKeys() listKeys {
	return listKeys{
		Up:   key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down: key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
	}
}

// keyHelp adapts a pane's bindings to bubbles/help.
type keyHelp struct {
	short []key.Binding
	full  [][]key.Binding
}

func (k keyHelp) ShortHelp() []key.Binding  { return k.short }
func (k keyHelp) FullHelp() [][]key.Binding { return k.full }

// moveCursor moves *cur up or down within n rows when km is an up or down
// key, and reports whether it was one.
func moveCursor(km tea.KeyPressMsg, k listKeys, cur *int, n int) bool {
	switch {
	case key.Matches(km, k.Up):
		if *cur > 0 {
			*cur--
		}
	case key.Matches(km, k.Down):
		if *cur < n-1 {
			*cur++
		}
	default:
		return false
	}
	return true
}

// visibleRange returns the first row to draw so that row cur shows among
// avail rows (at least one), and that number of rows.
func visibleRange(cur, avail int) (first, rows int) {
	rows = max(1, avail)
	if cur >= rows {
		first = cur - rows + 1
	}
	return first, rows
}
