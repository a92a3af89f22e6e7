package format

import (
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
