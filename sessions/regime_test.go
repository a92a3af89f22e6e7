package sessions

import (
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestRegimeDescribe: control toggles carry JSON values; the description
// shows strings without their quotes.
func TestRegimeDescribe(t *testing.T) {
	tests := []struct {
		r    Regime
		want string
	}{
		{Regime{Index: 1, ToRound: 9, Counted: [2]int{10, 10}}, "regime 1 (rounds 0–9); 10+10 trials"},
		{Regime{Index: 2, FromRound: 10, ToRound: -1, Counted: [2]int{3, 2},
			Toggles: []lab.Toggle{{What: "proxy", From: `"off"`, To: `"record"`}, {What: "tmpfs", From: "false", To: "true"}}},
			"regime 2 (rounds 10–): proxy off → record, tmpfs false → true; 3+2 trials"},
		{Regime{Index: 3, FromRound: 20, ToRound: -1, Toggles: []lab.Toggle{{What: "order", From: "random", To: "alternate"}}},
			"regime 3 (rounds 20–): order random → alternate; 0+0 trials"},
	}
	for _, tc := range tests {
		if got := tc.r.Describe(); got != tc.want {
			t.Errorf("Describe() = %q, want %q", got, tc.want)
		}
	}
}
