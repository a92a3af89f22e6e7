package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// The root model's layout and drawing: the panes' sizes, the help of the
// focused pane, the screen.

// resize gives every pane its area: the picking panes below the title
// and above the help bar, the dashboards all but the status and help lines.
func (m *Model) resize() {
	h := m.height - 3 // title, blank... help bar
	m.devices.SetSize(m.width, h)
	m.builds.SetSize(m.width, h)
	m.controls.SetSize(m.width, h-2) // the builds' line above the stepper
	if m.dash != nil {
		m.dash.SetSize(m.width, m.height-2)
	}
	if m.check != nil {
		m.check.SetSize(m.width, m.height-2)
	}
	if m.replay != nil {
		m.replay.SetSize(m.width, m.height-2)
	}
	if m.study != nil {
		m.study.SetSize(m.width, m.height-2)
	}
}

// paneHelp is the focused pane's bindings and the global ones.
func (m *Model) paneHelp() keyHelp {
	p := m.focused()
	h := keyHelp{short: p.ShortHelp(), full: p.FullHelp()}
	if p.Typing() {
		return h // keys go to the prompt: ? and q are text there
	}
	if m.screen == screenReplay && m.opt.BackQuits {
		// Opened from another screen: esc is the way back, first.
		h.short = append([]key.Binding{m.keys.Back}, h.short...)
	}
	h.short = append(h.short, m.keys.Help, m.keys.Quit)
	if p.CanLeave() && !(m.screen == screenReplay && m.opt.BackQuits) {
		h.short = append(h.short, m.keys.Back)
	}
	h.full = append(h.full, []key.Binding{m.keys.Help, m.keys.Back, m.keys.Quit})
	return h
}

// View draws the screen in front and the help bar.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "perflab"
	return v
}

func (m *Model) render() string {
	w, h := m.width, m.height
	if w < 20 || h < 5 {
		return "perflab needs a larger window"
	}
	hb := m.paneHelp()
	if m.help.ShowAll {
		title := m.st.Title.Render("perflab · keys")
		return block(title+"\n\n"+m.help.View(hb)+"\n\n"+m.st.Muted.Render("? or esc closes this help"), w, h)
	}
	helpLine := truncate(m.help.View(hb), w)
	var title, body string
	switch m.screen {
	case screenDevices:
		title = "perflab · 1/3 pick a device"
		body = m.devices.View()
	case screenBuilds:
		title = "perflab · 2/3 pick builds on " + m.device.ID
		body = m.builds.View()
	case screenControls:
		title = "perflab · 3/3 controls on " + m.device.ID
		if n := len(m.exp.Devices); n > 1 {
			title = fmt.Sprintf("perflab · 3/3 controls on a pool of %d devices", n)
		}
		body = m.controlsHeader() + "\n" + m.controls.View()
	default: // a dashboard draws its own title lines; its status line is its word
		p := m.focused()
		status := ""
		if s, ok := p.(statusPane); ok {
			status = s.StatusLine()
		}
		return p.View() + "\n" + pad(truncate(status, w), w) + "\n" + pad(helpLine, w)
	}
	head := m.st.Title.Render(truncate(title, w))
	if m.err != nil {
		head += "\n" + m.st.Error.Render(truncate(m.err.Error(), w))
	} else {
		head += "\n"
	}
	return head + "\n" + block(body, w, h-3) + "\n" + pad(helpLine, w)
}

// controlsHeader names the builds above the stepper.
func (m *Model) controlsHeader() string {
	keys := m.exp.ArmKeys()
	head := "A " + label(m.exp.Builds[keys[0]]) + "  vs  "
	for i, k := range keys[1:] {
		if i > 0 {
			head += ", "
		}
		head += string(rune('B'+i)) + " " + label(m.exp.Builds[k])
	}
	return truncate(head, m.width) + "\n"
}
