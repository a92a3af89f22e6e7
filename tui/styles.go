package tui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// Styles holds every style the workbench draws with. It is built once per
// background (dark or light) and colour mode and passed down to the panes, so
// no View creates styles of its own.
type Styles struct {
	NoColor bool

	Title         lipgloss.Style
	Header        lipgloss.Style
	Muted         lipgloss.Style
	Disabled      lipgloss.Style
	Selected      lipgloss.Style
	Cursor        lipgloss.Style
	Key           lipgloss.Style
	Error         lipgloss.Style
	Warning       lipgloss.Style
	OK            lipgloss.Style
	Regression    lipgloss.Style
	Improvement   lipgloss.Style
	NoChange      lipgloss.Style
	Undetermined  lipgloss.Style
	Panel         lipgloss.Style
	PanelTitle    lipgloss.Style
	ProgressFull  lipgloss.Style
	ProgressEmpty lipgloss.Style
	Help          help.Styles
}

// NewStyles builds the styles for a dark or light background. With noColor
// (NO_COLOR set) only text attributes are used: bold, faint, reverse,
// underline; every meaning conveyed by colour is also spelled out in text.
func NewStyles(dark, noColor bool) Styles {
	s := Styles{NoColor: noColor}
	ld := lipgloss.LightDark(dark)
	if noColor {
		s.Title = lipgloss.NewStyle().Bold(true)
		s.Header = lipgloss.NewStyle().Bold(true)
		s.Muted = lipgloss.NewStyle().Faint(true)
		s.Disabled = lipgloss.NewStyle().Faint(true)
		s.Selected = lipgloss.NewStyle().Reverse(true)
		s.Cursor = lipgloss.NewStyle().Bold(true)
		s.Key = lipgloss.NewStyle().Bold(true)
		s.Error = lipgloss.NewStyle().Bold(true)
		s.Warning = lipgloss.NewStyle().Bold(true)
		s.OK = lipgloss.NewStyle()
		s.Regression = lipgloss.NewStyle().Bold(true)
		s.Improvement = lipgloss.NewStyle().Underline(true)
		s.NoChange = lipgloss.NewStyle()
		s.Undetermined = lipgloss.NewStyle().Faint(true)
		s.PanelTitle = lipgloss.NewStyle().Bold(true)
		s.ProgressFull = lipgloss.NewStyle()
		s.ProgressEmpty = lipgloss.NewStyle().Faint(true)
		s.Panel = lipgloss.NewStyle().Border(lipgloss.NormalBorder())
		s.Help = help.Styles{
			Ellipsis:       lipgloss.NewStyle().Faint(true),
			ShortKey:       lipgloss.NewStyle().Bold(true),
			ShortDesc:      lipgloss.NewStyle(),
			ShortSeparator: lipgloss.NewStyle().Faint(true),
			FullKey:        lipgloss.NewStyle().Bold(true),
			FullDesc:       lipgloss.NewStyle(),
			FullSeparator:  lipgloss.NewStyle().Faint(true),
		}
		return s
	}
	accent := ld(lipgloss.Color("#5A3FC0"), lipgloss.Color("#B8A6FF"))
	muted := ld(lipgloss.Color("#7A7A7A"), lipgloss.Color("#8A8A8A"))
	s.Title = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.Header = lipgloss.NewStyle().Bold(true)
	s.Muted = lipgloss.NewStyle().Foreground(muted)
	s.Disabled = lipgloss.NewStyle().Foreground(ld(lipgloss.Color("#B0B0B0"), lipgloss.Color("#555555")))
	s.Selected = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.Cursor = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.Key = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.Error = lipgloss.NewStyle().Bold(true).Foreground(ld(lipgloss.Color("#C0002A"), lipgloss.Color("#FF5F6D")))
	s.Warning = lipgloss.NewStyle().Foreground(ld(lipgloss.Color("#9A6700"), lipgloss.Color("#F2C94C")))
	s.OK = lipgloss.NewStyle().Foreground(ld(lipgloss.Color("#1A7F37"), lipgloss.Color("#56D364")))
	s.Regression = lipgloss.NewStyle().Bold(true).Foreground(ld(lipgloss.Color("#C0002A"), lipgloss.Color("#FF5F6D")))
	s.Improvement = lipgloss.NewStyle().Bold(true).Foreground(ld(lipgloss.Color("#1A7F37"), lipgloss.Color("#56D364")))
	s.NoChange = lipgloss.NewStyle().Foreground(ld(lipgloss.Color("#444444"), lipgloss.Color("#C8C8C8")))
	s.Undetermined = lipgloss.NewStyle().Foreground(ld(lipgloss.Color("#9A6700"), lipgloss.Color("#F2C94C")))
	s.PanelTitle = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.ProgressFull = lipgloss.NewStyle().Foreground(accent)
	s.ProgressEmpty = lipgloss.NewStyle().Foreground(muted)
	s.Panel = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(muted)
	s.Help = help.DefaultStyles(dark)
	return s
}

// Verdict returns the style for a verdict word.
func (s Styles) Verdict(v string) lipgloss.Style {
	switch v {
	case "regression":
		return s.Regression
	case "improvement":
		return s.Improvement
	case "no change":
		return s.NoChange
	default:
		return s.Undetermined
	}
}
