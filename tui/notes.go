package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The notes view of a dashboard: every warning in full, then every line
// of the session's log (settings, toggles, notes, the end), wrapped to
// the screen and scrollable (a bubbles viewport). The panels cut both to
// a line each and show at most three warnings; ! opens them all (issue 29).

// notesKeys are the keys of the notes view.
type notesKeys struct {
	Toggle key.Binding
	Scroll key.Binding // help only: the viewport's keys
	Close  key.Binding // help only: esc, handled by the root (closeView)
}

func newNotesKeys() notesKeys {
	return notesKeys{
		Toggle: key.NewBinding(key.WithKeys("!"), key.WithHelp("!", "warnings & notes in full")),
		Scroll: key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓ pgup/pgdn", "scroll")),
		Close:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("!/esc", "close")),
	}
}

// notesPane is the notes view's state: open or not, and its viewport.
type notesPane struct {
	keys notesKeys
	open bool
	vp   viewport.Model
}

func newNotesPane() notesPane {
	vp := viewport.New()
	km := viewport.DefaultKeyMap()
	// space and the letters are the dashboards' keys (pause, step, …):
	// the view scrolls with the arrows and the page keys only.
	km.PageDown.SetKeys("pgdown")
	km.PageUp.SetKeys("pgup")
	km.Up.SetKeys("up")
	km.Down.SetKeys("down")
	for _, b := range []*key.Binding{&km.HalfPageUp, &km.HalfPageDown, &km.Left, &km.Right} {
		b.SetEnabled(false)
	}
	vp.KeyMap = km
	return notesPane{keys: newNotesKeys(), vp: vp}
}

// key handles the notes view's keys; false lets the dashboard's own keys act.
func (n *notesPane) key(msg tea.KeyPressMsg) bool {
	switch {
	case key.Matches(msg, n.keys.Toggle):
		n.open = !n.open
		if n.open {
			n.vp.GotoTop()
		}
		return true
	case !n.open:
		return false
	}
	switch msg.String() {
	case "up", "down", "pgup", "pgdown":
		n.vp, _ = n.vp.Update(msg)
		return true
	}
	return false
}

// help is the notes view's keys for the help bar.
func (n *notesPane) help() []key.Binding {
	if !n.open {
		return []key.Binding{n.keys.Toggle}
	}
	return []key.Binding{n.keys.Close, n.keys.Scroll}
}

// close shuts the view (esc); false when it was not open.
func (n *notesPane) close() bool {
	was := n.open
	n.open = false
	return was
}

// notesText is the view's content at width w: the warnings, each with a
// ⚠ and wrapped under its first line, then the log.
func notesText(st *Styles, warn, log []string, w int) string {
	var lines []string
	title := func(s string) { lines = append(lines, st.PanelTitle.Render(s)) }
	wrapped := func(mark, indent, s string, style func(...string) string) {
		for i, l := range strings.Split(ansi.Wrap(s, max(10, w-len(indent)), ""), "\n") {
			if i > 0 {
				mark = indent
			}
			lines = append(lines, style(mark+l))
		}
	}
	title(fmt.Sprintf("warnings (%d)", len(warn)))
	if len(warn) == 0 {
		lines = append(lines, st.Muted.Render("  none"))
	}
	for _, s := range warn {
		wrapped("⚠ ", "  ", s, st.Warning.Render)
	}
	lines = append(lines, "")
	title(fmt.Sprintf("settings, toggles and notes (%d)", len(log)))
	if len(log) == 0 {
		lines = append(lines, st.Muted.Render("  none yet"))
	}
	for _, s := range log {
		wrapped("  ", "      ", s, plain)
	}
	return strings.Join(lines, "\n")
}

// plain is a style that draws text as it is.
func plain(s ...string) string { return strings.Join(s, " ") }

// view draws the notes view of warn and log into w × h cells: a title
// line with the scroll position, then the viewport.
func (n *notesPane) view(st *Styles, warn, log []string, w, h int) string {
	n.vp.SetWidth(w)
	n.vp.SetHeight(max(1, h-1))
	n.vp.SetContent(notesText(st, warn, log, w))
	head := "warnings & notes in full · ↑/↓ pgup/pgdn scroll · ! or esc closes"
	if n.vp.TotalLineCount() > n.vp.Height() {
		head += fmt.Sprintf(" · %d%%", int(n.vp.ScrollPercent()*100+0.5))
	}
	return st.Header.Render(truncate(head, w)) + "\n" + n.vp.View()
}

// notesView draws the feed's warnings and log in full.
func (f *feed) notesView(w, h int) string {
	return f.notes.view(f.st, f.warnings(), f.state.log, w, h)
}
