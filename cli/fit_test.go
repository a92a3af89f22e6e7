package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHanging: a line wider than the terminal wraps at spaces, its later
// lines indented by two; a narrow one, or width 0, stays whole.
func TestHanging(t *testing.T) {
	long := "61ab288 commit 1: median 694.1 ms, Δ -0.25% [-1.23%, +0.95%] against 0ada59f base: inconclusive (12 trials a build); /root/.local/share/perflab/sessions/20261129-080603-e03831.jsonl"
	tests := []struct {
		line  string
		width int
		lines int
	}{
		{long, 0, 1},
		{long, 300, 1},
		{long, 80, 3},
		{"short", 80, 1},
	}
	for _, tt := range tests {
		got := hanging(tt.line, tt.width)
		ls := strings.Split(got, "\n")
		if len(ls) != tt.lines || strings.Join(strings.Fields(got), " ") != tt.line {
			t.Errorf("width %d: %d lines, want %d:\n%s", tt.width, len(ls), tt.lines, got)
		}
		for i, l := range ls {
			if tt.width > 0 && utf8.RuneCountInString(l) > tt.width && strings.Contains(l, " ") || i > 0 && !strings.HasPrefix(l, "  ") {
				t.Errorf("width %d: line %d %q", tt.width, i, l)
			}
		}
	}
}
