package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions"
)

func trimFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func fmtDur(d time.Duration) string { return format.Clock(d.Seconds()) }

// headLine is a dashboard's first line: the device and the state, then
// (withBuilds) the order and what is being compared. The state comes
// first: on a narrow screen the build names give way.
func (d *feed) headLine(word string, withBuilds bool, w int) string {
	st := d.st
	s := d.state
	buildName := func(k string) string {
		b := s.plan.Builds[k]
		if b.Name != "" {
			return b.Name
		}
		if b.App != "" {
			if b.EffectPct != 0 {
				return fmt.Sprintf("%s%+g%%", b.App, b.EffectPct)
			}
			return b.App
		}
		return k
	}
	where := s.device.ID
	if n := len(s.plan.Devices); n > 1 {
		where = fmt.Sprintf("pool of %d devices", n)
	}
	head := st.Title.Render(where) + " · " + st.Header.Render(word)
	if withBuilds {
		keys := s.plan.ArmKeys()
		vs := "A " + buildName(keys[0]) + " vs"
		for i, k := range keys[1:] {
			if i > 0 {
				vs += ","
			}
			vs += " " + string(rune('B'+i)) + " " + buildName(k)
		}
		head += " · order " + s.order + " · " + vs
	}
	return truncate(head, w)
}

// progress is the progress bar with the trial counts, the time spent,
// the ETA when eta is set, and suffix.
func (d *feed) progress(w int, eta bool, suffix string) string {
	p := d.state.Progress()
	info := fmt.Sprintf(" %d/%d", p.Done, p.Total)
	if p.Failed > 0 {
		info += fmt.Sprintf(" · %d failed", p.Failed)
	}
	info += " · " + fmtDur(p.Elapsed)
	if p.ETA > 0 && eta {
		info += " · ETA " + fmtDur(p.ETA)
	}
	info += suffix
	return progressLine(d.st, p.Fraction(), info, w)
}

// progressLine is the progress panel every dashboard shows: a bar of up
// to 40 cells for fraction f, then info, in w cells.
func progressLine(st *Styles, f float64, info string, w int) string {
	barW := max(10, min(40, w-len(info)-2))
	return truncate(progressBar(st, f, barW)+info, w)
}

// body lays the panes out: a pool's lanes across the top, then the
// panels in one column below 110 cells, two above. It is shared by the
// run's and the replay's dashboards. Sizing is part of the layout: how
// many rows the trials get depends on what the panes above them draw, so
// each pane is sized here, just before it is drawn.
func (d *feed) body(w, h int) string {
	if !d.lanes.Pool() {
		return d.panels(w, h)
	}
	d.lanes.SetSize(w, min(1+d.lanes.Len(), max(2, h/3)))
	lanes := viewLines(d.lanes.View())
	return strings.Join(lanes, "\n") + "\n" + d.panels(w, h-len(lanes))
}

// warnings are every warning the dashboard has: an unstable device's
// stability check first, as in the report, then warningLines.
func (d *feed) warnings() []string {
	warn := warningLines(d.state, d.panel)
	if sw := sessions.StabilityWarning(d.chart.Verdict()); sw != "" {
		warn = append([]string{sw}, warn...)
	}
	return warn
}

// scrollTo clamps the metrics' offset to rows shown and hands it to the
// analysis panes.
func (d *feed) scrollTo(rows int) {
	d.metricOff = min(d.metricOff, max(len(d.panel.metrics)-rows, 0))
	d.ci.SetOffset(d.metricOff)
	d.seq.SetOffset(d.metricOff)
	d.p.SetOffset(d.metricOff)
}

// panels lays out the combined panels (body without the lanes).
func (d *feed) panels(w, h int) string {
	st := d.st
	s := d.state
	samples := d.chart.Samples()
	summary, _ := d.chart.Verdict()
	showChart := samples > 0 && (len(s.Trials()) == 0 || (w >= 110 && h >= 30))
	warn := d.warnings()
	// With the chart hidden, a stable verdict stays in view as a plain line.
	stabLine := ""
	if samples > 0 && !showChart && strings.HasPrefix(summary, "stable") {
		stabLine = st.Muted.Render(truncate("✓ stability check: "+summary, w))
	}
	logs := s.log
	if w < 110 {
		// Keep room for the trial stream: shrink the panels on small screens.
		maxRows := max(1, (h-8)/2)
		d.ci.SetSize(w, maxRows)
		d.seq.SetSize(w, maxRows)
		d.p.SetSize(w, maxRows)
		d.scrollTo(maxRows)
		// Regimes: the analysed one only on short screens.
		d.regimes.SetSize(w, map[bool]int{true: 1, false: 3}[h < 30])
		var lines []string
		lines = append(lines, viewLines(d.ci.View())...)
		lines = append(lines, viewLines(d.seq.View())...)
		lines = append(lines, viewLines(d.p.View())...)
		lines = append(lines, viewLines(d.regimes.View())...)
		if stabLine != "" {
			lines = append(lines, stabLine)
		}
		for i, l := range warn {
			if i >= 3 {
				lines = append(lines, st.Warning.Render(fmt.Sprintf("  … %d more %s · ! shows all", len(warn)-i, plural(len(warn)-i, "warning", "warnings"))))
				break
			}
			lines = append(lines, st.Warning.Render(truncate("⚠ "+l, w)))
		}
		if n := len(logs); n > 0 {
			lines = append(lines, st.Muted.Render(truncate(logs[n-1], w)))
		}
		rest := h - len(lines)
		if showChart {
			d.chart.SetSize(w, rest)
			lines = append(viewLines(d.chart.View()), lines...)
		} else {
			d.trials.SetSize(w, rest)
			lines = append(lines, viewLines(d.trials.View())...)
		}
		return strings.Join(lines, "\n")
	}
	lw := w * 38 / 100
	rw := w - lw - 2
	var left []string
	if showChart {
		// The whole column while the check runs; once trials come, a small
		// chart, so the trial stream gets the room.
		ch := 8
		if len(s.Trials()) == 0 {
			ch = h
		}
		d.chart.SetSize(lw, ch)
		left = append(left, viewLines(d.chart.View())...)
	}
	d.trials.SetSize(lw, h-len(left))
	left = append(left, viewLines(d.trials.View())...)
	d.ci.SetSize(rw, 12)
	d.seq.SetSize(rw, 12)
	d.p.SetSize(rw, 12)
	d.scrollTo(12)
	d.regimes.SetSize(rw, 6)
	var right []string
	right = append(right, viewLines(d.ci.View())...)
	if seq := viewLines(d.seq.View()); len(seq) > 0 {
		right = append(right, "")
		right = append(right, seq...)
	}
	right = append(right, "")
	right = append(right, viewLines(d.p.View())...)
	if rl := viewLines(d.regimes.View()); len(rl) > 0 {
		right = append(right, "")
		right = append(right, rl...)
	}
	if stabLine != "" {
		right = append(right, "", truncate(stabLine, rw))
	}
	if len(warn) > 0 {
		right = append(right, "", st.PanelTitle.Render("warnings")+st.Muted.Render(" · ! in full"))
		for _, l := range warn {
			right = append(right, st.Warning.Render(truncate("⚠ "+l, rw)))
		}
	}
	if len(logs) > 0 {
		right = append(right, "", st.PanelTitle.Render("events"))
		room := h - len(right)
		start := max(0, len(logs)-room)
		for _, l := range logs[start:] {
			right = append(right, st.Muted.Render(truncate(l, rw)))
		}
	}
	return sideBySide(block(strings.Join(left, "\n"), lw, h), block(strings.Join(right, "\n"), rw, h), 2)
}
