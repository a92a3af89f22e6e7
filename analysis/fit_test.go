package analysis

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFitColumns: the columns kept, the name cut to what they leave (at
// least 16 runes), from its start and end or from its end only.
func TestFitColumns(t *testing.T) {
	rows := [][]string{
		{"metric", "unit", "Δ", "verdict"},
		{"decimal.AppendFloatToDecimal/Integers:allocs/op", "allocs/op", "+1.00%", "inconclusive"},
		{"short", "ns/op", "-20.00%", "regression"},
	}
	tests := []struct {
		name    string
		width   int
		keepEnd bool
		want    string // the long name as cut
	}{
		{"wide enough", 80, false, "decimal.AppendFloatToDecimal/Integers:allocs/op"},
		{"start and end", 50, false, "decimal.…Integers:allocs/op"},
		{"end", 50, true, "…Decimal/Integers:allocs/op"},
		{"no narrower than 16", 20, false, "decim…:allocs/op"},
	}
	for _, tt := range tests {
		got := FitColumns(rows, []int{0, 2, 3}, tt.width, tt.keepEnd)
		if got[1][0] != tt.want || got[2][0] != "short" || len(got[0]) != 3 || got[0][2] != "verdict" {
			t.Errorf("%s: %q", tt.name, got)
		}
		var sb strings.Builder
		WriteAligned(&sb, got, []bool{false, true, false})
		if n := WidestLine(sb.String()); tt.width >= 40 && n > tt.width {
			t.Errorf("%s: %d wide, want ≤ %d:\n%s", tt.name, n, tt.width, sb.String())
		}
	}
	if n := utf8.RuneCountInString(shorten("abcdefghijklmnopqrstuvwxyz", 16, false)); n != 16 {
		t.Errorf("shorten gave %d runes", n)
	}
}
