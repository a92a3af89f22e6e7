package watch

import (
	"testing"

	"github.com/perflab/perflab/sessions/history"
)

func TestBaseline(t *testing.T) {
	s := history.Series{}
	for _, r := range []string{"", "a", "b", "c", "d", "e"} { // "" an explicit reference
		s.Points = append(s.Points, history.Result{Rev: r})
	}
	real, fals := &history.Mark{Real: true}, &history.Mark{Real: false}
	tests := []struct {
		name   string
		alerts []history.Alert
		want   int
	}{
		{"no alerts", nil, 0},
		{"unmarked", []history.Alert{{Rev: "c"}}, 0},
		{"marked false", []history.Alert{{Rev: "c", Mark: fals}}, 0},
		{"marked real: from its step", []history.Alert{{Rev: "c", Mark: real}}, 3},
		{"the bisect's first bad wins over the detector's commit", []history.Alert{{Rev: "c", FirstBad: "b", Mark: real}}, 2},
		{"the latest step of several", []history.Alert{{Rev: "d", Mark: real}, {Rev: "b", Mark: real}}, 4},
		{"a commit not in the series", []history.Alert{{Rev: "zz", Mark: real}}, 0},
	}
	for _, tt := range tests {
		if got := Baseline(s, tt.alerts); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
