package history

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

// Result is one row of the history: a build's metric on a device, from
// one run.
type Result struct {
	Run     string `json:"run"`  // the run's key: "session:ID" or "csv:SHA-256"
	Kind    string `json:"kind"` // run, suite, bisect or csv
	Device  string `json:"device"`
	Build   string `json:"build"`
	Rev     string `json:"commit,omitempty"`
	RevTime string `json:"time,omitempty"`
	// Control is the experiment's control build; empty on the control's
	// own row and for CSV.
	Control   string         `json:"control,omitempty"`
	Metric    string         `json:"metric"`
	Unit      string         `json:"unit,omitempty"`
	N         int            `json:"n"`
	Median    analysis.Float `json:"median"`
	DeltaPct  analysis.Float `json:"delta_pct"`
	CILowPct  analysis.Float `json:"ci_low_pct"`
	CIHighPct analysis.Float `json:"ci_high_pct"`
	Verdict   string         `json:"verdict,omitempty"`
	Session   string         `json:"session,omitempty"`
	// Seq orders rows within a run; OrdTime orders runs in a series.
	Seq     int    `json:"-"`
	OrdTime string `json:"-"`
}

// Rev names a build's commit, for sessions whose builds came from git
// (a suite's two revisions, a bisect's candidates).
type Rev struct {
	Rev  string
	Time string // RFC 3339, or ""
	Seq  int    // order of the build in its range
	Name string // the build's name in its range, "" to keep the plan's
}

// DeviceName is a session's device for the history: the device model (a
// phone's, or a preset's), or for this host its host name, else its id.
func DeviceName(h sessions.Header) string {
	if h.Device.Backend == "local" && h.Host != "" {
		return h.Host
	}
	if h.Device.Model != "" {
		return h.Device.Model
	}
	return h.Device.ID
}

// BuildName is the name of the build of arm: its name, else a simulated
// app with its effect, else its command or APK.
func BuildName(plan *lab.Experiment, arm string) string {
	b := plan.Builds[arm]
	switch {
	case b.Name != "":
		return b.Name
	case b.App != "":
		if b.EffectPct != 0 {
			return fmt.Sprintf("%s%+g%%", b.App, b.EffectPct)
		}
		return b.App
	case len(b.Command) > 0:
		return strings.Join(b.Command, " ")
	case b.APK != "":
		return b.APK
	}
	return arm
}

// SessionRows analyses a session as perflab report does (the plan's
// options, the default regime) and returns a row per build and metric:
// the control's with its n and median, each other build's with its paired
// Δ% against the control, interval and verdict. revs, when not nil, gives
// each arm's commit.
func SessionRows(s *sessions.Session, kind string, revs map[string]Rev) ([]Result, error) {
	plan := &s.Header.Plan
	opt := engine.Options(plan)
	rc, err := sessions.ChooseRegime(s.Events, "", opt)
	if err != nil {
		return nil, err
	}
	arms := plan.ArmKeys()
	a := engine.Analyse(plan, sessions.ArmInputs(rc.Events, len(arms)), opt)
	device := DeviceName(s.Header)
	created := s.Header.Created.UTC().Format(time.RFC3339Nano)
	name := func(arm string) string {
		if rv := revs[arm]; rv.Name != "" {
			return rv.Name
		}
		return BuildName(plan, arm)
	}
	control := name(arms[0])
	row := func(arm string, i int) Result {
		r := Result{Run: "session:" + s.Header.ID, Kind: kind, Device: device, Build: name(arm),
			Session: s.Path, Seq: i, OrdTime: created}
		if rv, ok := revs[arm]; ok {
			r.Rev, r.RevTime, r.Seq = rv.Rev, rv.Time, rv.Seq
			if rv.Time != "" {
				r.OrdTime = rv.Time
			}
		}
		if i > 0 {
			r.Control = control
		}
		return r
	}
	nan := analysis.Float(math.NaN())
	var out []Result
	for i, rep := range a.Reports() {
		arm := arms[min(i+1, len(arms)-1)]
		for _, m := range rep.Metrics {
			if i == 0 && m.A.N > 0 {
				c := row(arms[0], 0)
				c.Metric, c.Unit, c.N, c.Median = m.Name, m.Unit, m.A.N, m.A.Median
				c.DeltaPct, c.CILowPct, c.CIHighPct = nan, nan, nan
				out = append(out, c)
			}
			if m.B.N == 0 {
				continue
			}
			t := row(arm, i+1)
			t.Metric, t.Unit, t.N, t.Median = m.Name, m.Unit, m.B.N, m.B.Median
			t.DeltaPct, t.CILowPct, t.CIHighPct = m.Decision.DeltaPct, m.Decision.CILowPct, m.Decision.CIHighPct
			t.Verdict = m.Verdict
			out = append(out, t)
		}
	}
	return out, nil
}

// sessionKind tells a suite's session from a run's.
func sessionKind(s *sessions.Session) string {
	if s.Header.Plan.Suite != nil {
		return "suite"
	}
	return "run"
}

// suiteRevs gives a suite's two arms their commits.
func suiteRevs(s *sessions.Session) map[string]Rev {
	su := s.Header.Plan.Suite
	if su == nil {
		return nil
	}
	return map[string]Rev{lab.ArmControl: {Rev: su.BaseRev, Seq: 0}, lab.ArmTreatment: {Rev: su.HeadRev, Seq: 1}}
}
