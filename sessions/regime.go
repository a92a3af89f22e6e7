package sessions

import (
	"fmt"

	"github.com/perflab/perflab/lab"
)

// Regime is a stretch of rounds under one setting: every toggle of the
// controls or the order (not pause or resume) starts a new regime at the
// round it takes effect.
type Regime struct {
	Index     int          // 1-based
	FromRound int          // first round (inclusive)
	ToRound   int          // last round (inclusive); -1: open-ended
	Toggles   []lab.Toggle // the toggles that started it (none for the first)
	Notes     []string     // notes made during it
	Counted   [2]int       // counted trials of control and treatment
}

// Describe is a one-line account of the regime, e.g.
// "regime 2 (rounds 5–19): tmpfs off → on; 15+15 trials".
func (r Regime) Describe() string {
	rounds := fmt.Sprintf("rounds %d–%d", r.FromRound, r.ToRound)
	if r.ToRound < 0 {
		rounds = fmt.Sprintf("rounds %d–", r.FromRound)
	}
	s := fmt.Sprintf("regime %d (%s)", r.Index, rounds)
	for i, t := range r.Toggles {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		s += sep + fmt.Sprintf("%s %s → %s", t.What, t.From, t.To)
	}
	return s + fmt.Sprintf("; %d+%d trials", r.Counted[0], r.Counted[1])
}

// Regimes splits a session's events into regimes (one when nothing was
// toggled).
func Regimes(events []lab.Event) []Regime {
	rs := []Regime{{Index: 1, ToRound: -1}}
	for i := range events {
		e := &events[i]
		cur := &rs[len(rs)-1]
		switch {
		case e.Type == lab.EventToggle && e.Toggle != nil && e.Toggle.What != "pause" && e.Toggle.What != "resume":
			t := *e.Toggle
			if cur.Counted == [2]int{} { // nothing counted yet: the same regime
				cur.Toggles = append(cur.Toggles, t)
				continue
			}
			cur.ToRound = t.Round - 1
			rs = append(rs, Regime{Index: len(rs) + 1, FromRound: t.Round, ToRound: -1, Toggles: []lab.Toggle{t}})
		case e.Type == lab.EventNote && e.Note != nil:
			cur.Notes = append(cur.Notes, e.Note.Text)
		default:
			if arm, ok := countedArm(e); ok {
				cur.Counted[arm]++
			}
		}
	}
	return rs
}

// RegimeEvents keeps the events of regime r: its trials, and every event
// that is not a trial (settings, toggles, notes, end).
func RegimeEvents(events []lab.Event, r Regime) []lab.Event {
	out := make([]lab.Event, 0, len(events))
	for _, e := range events {
		if e.Type == lab.EventTrial && e.Trial != nil {
			if e.Trial.Round < r.FromRound || r.ToRound >= 0 && e.Trial.Round > r.ToRound {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}
