package cli

import (
	"strings"
	"unicode/utf8"

	"github.com/perflab/perflab/format"
)

// fitProse wraps each line of text wider than width (0: none) at spaces,
// indented as it was: the prose around a table fitted to the terminal
// (analysis.SuiteTableFit) – headings, notes and warnings.
func fitProse(text string, width int) string {
	if width <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if utf8.RuneCountInString(l) > width {
			lines[i] = format.Wrap(l, width)
		}
	}
	return strings.Join(lines, "\n")
}
