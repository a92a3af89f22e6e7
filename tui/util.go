package tui

import (
	"github.com/perflab/perflab/format"
	"os"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/textinput"

	"charm.land/lipgloss/v2"
	ltable "charm.land/lipgloss/v2/table"
	"github.com/charmbracelet/x/ansi"
)

// truncate cuts s (which may hold ANSI styles) to at most w cells, marking a
// cut with an ellipsis.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= w {
		return s
	}
	return ansi.Truncate(s, wholeNumberCut(ansi.Strip(s), w-1)+1, "…")
}

// wholeNumberCut is where to cut plain text to keep at most n cells: n,
// or the start of a number that n would cut in two ("1766 → 168…" reads
// as a value), unless that drops more than half of the line.
func wholeNumberCut(plain string, n int) int {
	num := func(r rune) bool { return r >= '0' && r <= '9' || r == '.' || r == ',' }
	cells, start := 0, -1 // start: the cell where the current number began
	for _, r := range plain {
		if cells == n {
			if num(r) && start >= 0 && start > n/2 {
				return start
			}
			return n
		}
		if !num(r) {
			start = -1
		} else if start < 0 {
			start = cells
		}
		cells += ansi.StringWidth(string(r))
	}
	return n
}

// pad cuts or pads s to exactly w cells.
func pad(s string, w int) string {
	s = truncate(s, w)
	if n := lipgloss.Width(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// block fits text into a w×h rectangle: every line cut or padded to w, and
// lines dropped or blank lines added to make h.
func block(text string, w, h int) string {
	if h <= 0 {
		return ""
	}
	lines := strings.Split(text, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lines[i] = pad(l, w)
	}
	return strings.Join(lines, "\n")
}

// sideBySide joins two blocks of equal height with a gap.
func sideBySide(left, right string, gap int) string {
	return lipgloss.JoinHorizontal(lipgloss.Top, left, strings.Repeat(" ", gap), right)
}

// wrapWords breaks text into at most n lines of width w, the last cut with
// an ellipsis if the text is longer.
func wrapWords(text string, w, n int) []string {
	var lines []string
	if text = strings.TrimSpace(text); text != "" {
		lines = strings.Split(format.Wrap(text, w), "\n")
	}
	if len(lines) > n {
		lines = lines[:n]
		lines[n-1] = truncate(lines[n-1]+" …", w)
	}
	for i, l := range lines {
		lines[i] = truncate(l, w)
	}
	return lines
}

// newTextInput returns a text input with a steady cursor: a blinking one
// redraws the screen twice a second for nothing.
func newTextInput() textinput.Model {
	ti := textinput.New()
	st := textinput.DefaultDarkStyles()
	st.Cursor.Blink = false
	ti.SetStyles(st)
	return ti
}

// homePath writes a path under the user's home directory as ~/..., so a
// session's path fits a status line.
func homePath(p string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	if rel, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
		return "~/" + rel
	}
	return p
}

// pickerTable draws a picker's rows in view as a lipgloss table without
// borders, its columns sized to their content (narrowed to width when they
// do not fit, the widest cells cut): a first column for the cursor (▸ on
// row cur), then the rows' cells, each styled by style when it says so
// (row and column of rows), else selected on the cursor's row.
func pickerTable(st *Styles, rows [][]string, cur, width int, style func(row, col int) (lipgloss.Style, bool)) string {
	for i := range rows {
		mark := ""
		if i == cur {
			mark = "▸"
		}
		rows[i] = append([]string{mark}, rows[i]...)
	}
	t := ltable.New().Border(lipgloss.HiddenBorder()).
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderHeader(false).BorderColumn(false).Rows(rows...).Wrap(false).
		StyleFunc(func(row, col int) lipgloss.Style {
			if row < 0 || row >= len(rows) {
				return lipgloss.NewStyle().PaddingRight(1)
			}
			if col == 0 {
				return st.Cursor.PaddingRight(1)
			}
			if s, ok := style(row, col-1); ok {
				return s.PaddingRight(1)
			}
			if row == cur {
				return st.Selected.PaddingRight(1)
			}
			return lipgloss.NewStyle().PaddingRight(1)
		})
	out := t.String()
	if lipgloss.Width(out) > width {
		out = t.Width(width).String()
	}
	return out
}
