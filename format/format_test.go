package format

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/perflab/perflab/analysis"
)

func TestFormats(t *testing.T) {
	nan := analysis.Float(math.NaN())
	for _, tt := range []struct{ got, want string }{
		{Rate(0.1234), "12.3%"},
		{Rate(nan), "—"},
		{SignedPct(1.234), "+1.23%"},
		{SignedPct(-0.4), "-0.40%"},
		{SignedPct(nan), "—"},
		{Num(1234.5678), "1235"},
		{Num(0.000123456), "0.0001235"},
		{Num(nan), "—"},
		{P(0.049996, 0.05), "0.049996"},
		{P(0.0123, 0.05), "0.012"},
		{P(nan, 0.05), "—"},
		{Elapsed(4200 * time.Millisecond), "4.2s"},
		{Elapsed(185 * time.Second), "3m05s"},
		{Elapsed(3723 * time.Second), "1h02m03s"},
		{Elapsed(-time.Second), "0.0s"},
		{Elapsed(time.Duration(math.MaxInt64)), "2562047h47m16s"},
		{Clock(65), "1:05"},
		{Clock(3725), "1:02:05"},
		{Clock(-3), "0:00"},
		{Clock(math.NaN()), "0:00"},
		{Clock(math.Inf(1)), "2501999792983:36:32"},
		{Bar(0.5, 10, "#", "."), "#####....."},
		{Bar(2, 4, "#", "."), "####"},
		{Bar(-1, 4, "#", "."), "...."},
		{Bar(math.NaN(), 4, "#", "."), "...."},
		{Bar(0.5, -3, "#", "."), ""},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestBarHugeTotals: issue 12 item 7. Progress at 2^63-1 trials must not
// panic (strings.Repeat with a negative count) nor draw a negative bar.
func TestBarHugeTotals(t *testing.T) {
	for _, c := range []struct{ done, total int }{{1, math.MaxInt}, {math.MaxInt, math.MaxInt}, {5, 0}, {-1, 10}, {math.MaxInt, 1}} {
		f := Fraction(c.done, c.total)
		if f < 0 || f > 1 {
			t.Errorf("Fraction(%d, %d) = %v", c.done, c.total, f)
		}
		if b := Bar(f, 20, "#", "."); len(b) != 20 {
			t.Errorf("Bar for %d/%d = %q", c.done, c.total, b)
		}
	}
}

// TestStyles: the Text style renders as the Screen style does, but for the
// mark of an undefined value; Num and Digits are fmt's %.4g and %.ng, the
// layouts the Markdown tables and plot titles used before they came here.
func TestStyles(t *testing.T) {
	nan, inf := analysis.Float(math.NaN()), analysis.Float(math.Inf(-1))
	for _, tt := range []struct{ got, want string }{
		{Text.Num(nan), "n/a"},
		{Text.Num(inf), "n/a"},
		{Text.SignedPct(nan), "n/a"},
		{Text.P(nan, 0.05), "n/a"},
		{Text.Rate(nan), "n/a"},
		{Text.Digits(nan, 3), "n/a"},
		{Screen.Digits(inf, 3), "—"},
		{Text.Num(1234.5678), "1235"},
		{Text.SignedPct(-0.4), "-0.40%"},
		{Text.P(0.049996, 0.05), "0.049996"},
		{Text.Digits(-0.45678, 3), "-0.457"},
		{Text.Digits(1.5e-7, 3), "1.5e-07"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 123456789, 1e-300, -9.99951e5, 1e21, 5e-324, math.MaxFloat64}
	for i := 0; i < 2000; i++ {
		vals = append(vals, math.Float64frombits(uint64(i)*0x9e3779b97f4a7c15))
	}
	for _, x := range vals {
		f := analysis.Float(x)
		if !f.Defined() {
			continue
		}
		for _, n := range []int{3, 4} {
			if got, want := Text.Digits(f, n), fmt.Sprintf("%.*g", n, x); got != want {
				t.Errorf("Digits(%v, %d) = %q, fmt %%.%dg gives %q", x, n, got, n, want)
			}
		}
		if Text.Num(f) != Num(f) || Text.SignedPct(f) != SignedPct(f) || Text.P(f, 0.05) != P(f, 0.05) || Text.Rate(f) != Rate(f) {
			t.Errorf("%v: Text and Screen differ on a defined value", x)
		}
	}
}

func TestWrap(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"a bb ccc dddd", 6, "a bb\nccc\ndddd"},
		{"  at x, first bad y", 10, "  at x,\n  first\n  bad y"},
		{"averyveryverylongword x", 5, "averyveryverylongword\nx"},
		{"", 10, ""},
	} {
		if got := Wrap(c.in, c.width); got != c.want {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}
