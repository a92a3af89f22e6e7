package sessions

import (
	"fmt"
	"math"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/check"
)

// StabilitySummary judges the stability check's samples so far
// (analysis.StabilityOf) and returns a one-line summary and the reasons
// for an unstable verdict. It is linear in the samples, a few hundred at
// most.
func StabilitySummary(ps []lab.ProbeSample) (string, []string) {
	ss := check.StabilitySamples(ps)
	opt := analysis.DefaultStabilityOptions()
	st := analysis.StabilityOf(ss, opt)
	if len(ss) < opt.MinSamples {
		// Too few samples to judge anything: say so instead of a verdict.
		return fmt.Sprintf("collecting (%d/%d) · mean %.0f MFLOPS", len(ss), opt.MinSamples, st.MeanMFLOPS.Or(math.NaN())), nil
	}
	line := fmt.Sprintf("%s · mean %.0f MFLOPS · CV %s · drift %s/min", st.Verdict,
		st.MeanMFLOPS.Or(math.NaN()), pctOf(float64(st.CV)*100), pctOf(float64(st.DriftPctPerMin)))
	if len(st.Reasons) == 0 {
		return line, nil
	}
	return line, st.Reasons
}

func pctOf(x float64) string {
	if math.IsNaN(x) {
		return format.Undefined
	}
	return fmt.Sprintf("%.2f%%", x)
}

// StabilityWarning is the warning of a stability check (summary and
// reasons from StabilitySummary) that did not find the device stable, its
// verdict first ("stability check: unstable: coefficient of variation
// 13.0% above 2.0%; ..."); "" while it collects or when stable.
func StabilityWarning(summary string, reasons []string) string {
	if summary == "" || strings.HasPrefix(summary, "stable") || strings.HasPrefix(summary, "collecting") {
		return ""
	}
	verdict, _, _ := strings.Cut(summary, " · ")
	if len(reasons) == 0 {
		return "stability check: " + summary
	}
	return "stability check: " + verdict + ": " + strings.Join(reasons, "; ")
}

// ReadbackWarning is the warning when the governor's settings read back
// differently from what was written, "" without mismatches.
func ReadbackWarning(mismatches []string) string {
	if len(mismatches) == 0 {
		return ""
	}
	return "governor read-back differs: " + strings.Join(mismatches, ", ")
}

// SetupWarnings are the warnings about how a session's device was set up
// that the workbench shows beside the analysis: the stability check's
// (StabilityWarning) and the governor's read-back (ReadbackWarning), so
// that report, replay and run --headless give them too.
func SetupWarnings(events []lab.Event) []string {
	var probes []lab.ProbeSample
	var mismatches []string
	for i := range events {
		switch e := &events[i]; {
		case e.Type == lab.EventProbe && e.Probe != nil:
			probes = append(probes, *e.Probe)
		case e.Type == lab.EventSettings && e.Settings != nil:
			mismatches = append(mismatches, e.Settings.Mismatches...)
		}
	}
	var out []string
	if len(probes) >= 2 {
		if w := StabilityWarning(StabilitySummary(probes)); w != "" {
			out = append(out, w)
		}
	}
	if w := ReadbackWarning(mismatches); w != "" {
		out = append(out, w)
	}
	return out
}
