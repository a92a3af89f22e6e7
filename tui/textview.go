package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// TextView is a screen of text opened from another one (the history's
// bisect record): a title, the text wrapped to the window and scrollable
// (a bubbles viewport: ↑/↓, pgup/pgdn, home/end), esc or q to go back.
type TextView struct {
	st    Styles
	title string
	text  string
	vp    viewport.Model
	w, h  int
}

// NewTextView shows text under title.
func NewTextView(st Styles, title, text string) *TextView {
	v := &TextView{st: st, title: title, text: strings.TrimRight(text, "\n"), vp: viewport.New()}
	v.resize(80, 24)
	return v
}

func (v *TextView) resize(w, h int) {
	v.w, v.h = max(w, 20), max(h, 5)
	v.vp.SetWidth(v.w)
	v.vp.SetHeight(v.h - 3) // title, blank, help
	v.vp.SetContent(ansi.Wrap(v.text, v.w, " ,"))
}

// Init does nothing.
func (v *TextView) Init() tea.Cmd { return nil }

// Update scrolls, sizes and quits.
func (v *TextView) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		v.resize(msg.Width, msg.Height)
	case tea.KeyPressMsg:
		switch msg.String() {
		case "esc", "q", "ctrl+c":
			return v, tea.Quit
		case "home":
			v.vp.GotoTop()
		case "end":
			v.vp.GotoBottom()
		default:
			v.vp, _ = v.vp.Update(msg)
		}
	}
	return v, nil
}

// View draws the screen.
func (v *TextView) View() tea.View { return tea.NewView(v.Render()) }

// Render is the screen as text.
func (v *TextView) Render() string {
	help := "↑/↓ pgup/pgdn scroll · esc back"
	if v.vp.TotalLineCount() > v.vp.Height() {
		help += fmt.Sprintf(" · %d%%", int(v.vp.ScrollPercent()*100+0.5))
	}
	return v.st.Title.Render(truncate(v.title, v.w)) + "\n\n" + v.vp.View() + "\n" + v.st.Muted.Render(truncate(help, v.w))
}
