// Package format is the one home of the small text renderings the CLI and
// the workbench share: percentages, numbers, durations, clocks and
// progress bars. Rendering of whole tables stays with its owner
// (analysis.Table, the TUI panes); these are the pieces they agree on.
// An undefined statistic prints as its Style says: "—" on screen (Screen,
// the package functions), "n/a" in plain text (Text: Markdown tables, plot
// titles), the one difference between them.
package format

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/perflab/perflab/analysis"
)

// Undefined stands for a statistic that is undefined on screen.
const Undefined = "—"

// Style is how a rendering marks an undefined statistic; its methods
// format numbers the same way in every style, and differ only in that
// mark.
type Style string

const (
	// Screen is the workbench's style: undefined prints Undefined ("—").
	Screen Style = Undefined
	// Text is the style of plain-text output outside analysis's tables
	// (Markdown tables, plot titles): undefined prints "n/a", as
	// analysis.Table does.
	Text Style = "n/a"
)

// Rate formats a proportion (0.123) as a percentage with one decimal
// ("12.3%"), Undefined when undefined.
func Rate(f analysis.Float) string { return Screen.Rate(f) }

// SignedPct formats a percentage with its sign and two decimals ("+1.23%",
// "-0.40%"), Undefined when undefined.
func SignedPct(f analysis.Float) string { return Screen.SignedPct(f) }

// P formats a p-value tested against alpha with three decimals (more when
// rounding would carry it across alpha, analysis.FormatP), Undefined when
// undefined.
func P(f analysis.Float, alpha float64) string { return Screen.P(f, alpha) }

// Num formats a number with up to 4 significant digits, Undefined when
// undefined.
func Num(f analysis.Float) string { return Screen.Num(f) }

// Rate is Rate in style s.
func (s Style) Rate(f analysis.Float) string {
	if !f.Defined() {
		return string(s)
	}
	return strconv.FormatFloat(100*float64(f), 'f', 1, 64) + "%"
}

// SignedPct is SignedPct in style s.
func (s Style) SignedPct(f analysis.Float) string {
	if !f.Defined() {
		return string(s)
	}
	return fmt.Sprintf("%+.2f%%", float64(f))
}

// P is P in style s.
func (s Style) P(f analysis.Float, alpha float64) string {
	if !f.Defined() {
		return string(s)
	}
	return analysis.FormatP(float64(f), alpha, 3)
}

// Num is Num in style s.
func (s Style) Num(f analysis.Float) string { return s.Digits(f, 4) }

// Digits formats a number with up to n significant digits (%.ng: 0.4567
// at 3 is "0.457"), the mark of style s when undefined.
func (s Style) Digits(f analysis.Float, n int) string {
	if !f.Defined() {
		return string(s)
	}
	return strconv.FormatFloat(float64(f), 'g', n, 64)
}

// Elapsed formats a duration for progress lines: "4.2s" under a minute,
// then "3m05s" and "1h02m03s". Negative durations show as 0.
func Elapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	d = d.Round(time.Second)
	h, m, s := int64(d.Hours()), int64(d.Minutes())%60, int64(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}

// Clock formats seconds since a session's start as m:ss or h:mm:ss.
// Negative, NaN and absurdly large values are clamped.
func Clock(t float64) string {
	if !(t > 0) {
		t = 0
	}
	const maxSec = 1 << 53
	sec := int64(math.Min(t+0.5, maxSec))
	if sec >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", sec/3600, sec/60%60, sec%60)
	}
	return fmt.Sprintf("%d:%02d", sec/60, sec%60)
}

// Filled returns how many of width cells a bar at fraction frac fills,
// clamped to [0, width]: fractions below 0, above 1 or NaN (a total of 0,
// or overflowing counts) never make a negative or overlong bar.
func Filled(frac float64, width int) int {
	if width <= 0 || !(frac > 0) {
		return 0
	}
	if frac >= 1 {
		return width
	}
	return min(width, max(0, int(math.Round(frac*float64(width)))))
}

// Bar draws a bar of width cells at fraction frac with full and empty
// glyphs ("#" and "." in logs, "█" and "░" on screens).
func Bar(frac float64, width int, full, empty string) string {
	n := Filled(frac, width)
	return strings.Repeat(full, n) + strings.Repeat(empty, max(0, width-n))
}

// Fraction is done/total in [0, 1]; 0 when total is not positive.
func Fraction(done, total int) float64 {
	if total <= 0 || done <= 0 {
		return 0
	}
	return min(1, float64(done)/float64(total))
}

// Plural returns one when n is 1, else many: "1 build", "3 builds".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Wrap breaks s into lines of at most width characters at spaces (a word
// longer than width stays whole on its line), each line indented as s
// is, for text fitted to a terminal outside the screens.
func Wrap(s string, width int) string {
	indent := s[:len(s)-len(strings.TrimLeft(s, " "))]
	width -= len(indent)
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return indent + strings.Join(lines, "\n"+indent)
}

// MarkdownCell keeps text from breaking a Markdown table's cell or turning
// into markup (report --markdown, watch's alerts file).
func MarkdownCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`").Replace(s)
}
