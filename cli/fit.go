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

// hanging wraps line to width (0: whole) as fitProse does, its second and
// later lines indented by two more spaces than the first, so that a log's
// lines stay apart (watch's per-commit lines in a terminal).
func hanging(line string, width int) string {
	if width <= 0 || utf8.RuneCountInString(line) <= width {
		return line
	}
	indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
	first, rest, _ := strings.Cut(format.Wrap(line, width), "\n")
	return first + "\n" + format.Wrap(indent+"  "+strings.Join(strings.Fields(rest), " "), width)
}
