package sessions

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/perflab/perflab/analysis"
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
	Rounds    int          // rounds with a counted trial
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
		s += sep + fmt.Sprintf("%s %s → %s", t.What, jsonText(t.From), jsonText(t.To))
	}
	return s + fmt.Sprintf("; %d+%d trials", r.Counted[0], r.Counted[1])
}

// jsonText shows a control toggle's JSON string value without its quotes
// ("\"record\"" → record); anything else as it is.
func jsonText(v string) string {
	var s string
	if json.Unmarshal([]byte(v), &s) == nil {
		return s
	}
	return v
}

// Regimes splits a session's events into regimes (one when nothing was
// toggled).
func Regimes(events []lab.Event) []Regime {
	rs := []Regime{{Index: 1, ToRound: -1}}
	rounds := map[int]bool{} // rounds with a counted trial
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
			// A trial counts in the regime of its round: the rest of the
			// round in which a toggle came belongs to the regime before.
			// With more builds, the base and B stand for all.
			if arm, ok := countedArm(e); ok && arm < 2 {
				k := len(rs) - 1
				for k > 0 && e.Trial.Round < rs[k].FromRound {
					k--
				}
				rs[k].Counted[arm]++
				if !rounds[e.Trial.Round] {
					rounds[e.Trial.Round] = true
					rs[k].Rounds++
				}
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

// MinRegimeTrials is the fewest counted trials per arm for a regime to be
// the primary one by default.
const MinRegimeTrials = 5

// RegimeChoice is which regime a view analyses and what it says about the
// others. report, replay and the workbench's panels all make it with
// ChooseRegime.
type RegimeChoice struct {
	Regimes []Regime
	// Pick is the index in Regimes of the analysed regime; -1 when all are
	// pooled (which "all", or a session with one regime).
	Pick int
	// Events are the events to analyse: the picked regime's (RegimeEvents)
	// or all of them.
	Events []lab.Event
	// Analysed says which regime is analysed and why, e.g. "analysed:
	// regime 2 of 2 (the latest with at least 5 trials per arm)"; empty
	// with one regime.
	Analysed string
	// Differ warns, per metric, when another regime's Δ interval does not
	// overlap the analysed one's: the toggle changed the answer.
	Differ []string
	// Order is the order effect of each metric within Events
	// (OrderEffects): rounds that ran A first against rounds that ran B
	// first, which a drift over time does not move.
	Order []OrderEffect
}

// List is the regimes one per line with their notes, headed by a count;
// nil with one regime.
func (c RegimeChoice) List() []string {
	if len(c.Regimes) < 2 {
		return nil
	}
	out := []string{fmt.Sprintf("%d regimes (each toggle of controls or order starts one):", len(c.Regimes))}
	for _, r := range c.Regimes {
		out = append(out, "  "+r.Describe())
		for _, n := range r.Notes {
			out = append(out, "    note: "+n)
		}
	}
	return out
}

// ChooseRegime picks the events to analyse when toggles split the session
// into regimes: regime N (which "N"), all of them pooled ("all"), or by
// default ("") the latest regime with at least MinRegimeTrials counted
// trials per arm (when none has, the one with the most trials in its
// smaller arm). It compares every
// other regime with at least MinRegimeTrials trials per arm with the
// picked one under opt and warns when a metric's Δ intervals do not
// overlap: a regime gets an interval and a warning only with enough
// trials for a test (issue 25: a warning quoted "[+5.61%, +5.62%]" from
// two pairs); an interval short of the confidence is none (Decision).
func ChooseRegime(events []lab.Event, which string, opt analysis.Options) (RegimeChoice, error) {
	rc := RegimeChoice{Regimes: Regimes(events), Pick: -1, Events: events}
	rs := rc.Regimes
	if len(rs) < 2 {
		if which != "" && which != "all" && which != "1" {
			return rc, fmt.Errorf("--regime %s: the session has one regime (nothing was toggled)", which)
		}
		rc.Order = OrderEffects(rc.Events)
		return rc, nil
	}
	if which == "all" {
		rc.Analysed = fmt.Sprintf("all %d regimes pooled (--regime all): settings changed during the run", len(rs))
		rc.Order = OrderEffects(rc.Events)
		return rc, nil
	}
	pick := -1
	how := "chosen with --regime"
	if which != "" {
		n, err := strconv.Atoi(which)
		if err != nil || n < 1 || n > len(rs) {
			return rc, fmt.Errorf("--regime %q: want all or a number from 1 to %d", which, len(rs))
		}
		pick = n - 1
	} else {
		for k := len(rs) - 1; k >= 0 && pick < 0; k-- {
			if rs[k].Counted[0] >= MinRegimeTrials && rs[k].Counted[1] >= MinRegimeTrials {
				pick = k
			}
		}
		how = fmt.Sprintf("the latest with at least %d trials per arm", MinRegimeTrials)
		if pick < 0 {
			// None has enough: the one with the most trials in its
			// smaller arm, the latest of those.
			pick = len(rs) - 1
			for k := len(rs) - 2; k >= 0; k-- {
				if min(rs[k].Counted[0], rs[k].Counted[1]) > min(rs[pick].Counted[0], rs[pick].Counted[1]) {
					pick = k
				}
			}
			how = fmt.Sprintf("none has %d trials per arm yet: the one with the most", MinRegimeTrials)
		}
	}
	rc.Pick = pick
	rc.Events = RegimeEvents(events, rs[pick])
	rc.Analysed = fmt.Sprintf("analysed: regime %d of %d (%s)", pick+1, len(rs), how)
	rc.Order = OrderEffects(rc.Events)
	chosen := analysis.Compare(MetricInputs(rc.Events), opt)
	for k, r := range rs {
		if k == pick || r.Counted[0] < MinRegimeTrials || r.Counted[1] < MinRegimeTrials {
			continue
		}
		other := analysis.Compare(MetricInputs(RegimeEvents(events, r)), opt)
		for _, m := range other.Metrics {
			for _, c := range chosen.Metrics {
				if c.Name != m.Name {
					continue
				}
				a, b := m.Decision, c.Decision
				if a.CILowPct.Defined() && b.CILowPct.Defined() && (a.CILowPct > b.CIHighPct || a.CIHighPct < b.CILowPct) {
					rc.Differ = append(rc.Differ, fmt.Sprintf("%s: the toggle changed the answer: regime %d Δ %+.2f%% [%+.2f%%, %+.2f%%] differs from regime %d Δ %+.2f%% [%+.2f%%, %+.2f%%]",
						m.Name, k+1, float64(a.DeltaPct), float64(a.CILowPct), float64(a.CIHighPct),
						pick+1, float64(b.DeltaPct), float64(b.CILowPct), float64(b.CIHighPct)))
				}
			}
		}
	}
	return rc, nil
}
