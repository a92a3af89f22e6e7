package history_test

import (
	"math"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/sessions/history"
)

func TestConfirms(t *testing.T) {
	nan := analysis.Float(math.NaN())
	for _, tt := range []struct {
		verdict      string
		ab, detected analysis.Float
		want         bool
	}{
		{analysis.VerdictRegression, 2.1, 2.0, true},
		{analysis.VerdictImprovement, -3, -2.5, true},
		{analysis.VerdictImprovement, -1.5, 2.0, false}, // a step up that the A/B finds going down
		{analysis.VerdictRegression, 2.1, -2.0, false},
		{analysis.VerdictNoChange, 0.1, 2.0, false},
		{analysis.VerdictInconclusive, 2.1, 2.0, false},
		{analysis.VerdictRegression, 2.1, nan, false},
	} {
		if got := history.Confirms(tt.verdict, tt.ab, tt.detected); got != tt.want {
			t.Errorf("Confirms(%s, A/B %v, detected %v) = %v, want %v", tt.verdict, tt.ab, tt.detected, got, tt.want)
		}
	}
}
