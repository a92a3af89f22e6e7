package tui

import "charm.land/bubbles/v2/key"

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
