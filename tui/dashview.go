package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
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
	head := st.Title.Render(s.device.ID) + " · " + st.Header.Render(word)
	if withBuilds {
		head += " · order " + s.order + " · A " + buildName(lab.ArmControl) + " vs B " + buildName(lab.ArmTreatment)
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

// body lays the panels out: one column below 110 cells, two above.
// It is shared by the run's and the replay's dashboards.
func (d *feed) body(w, h int) string {
	st := d.st
	s := d.state
	showChart := len(s.probe) > 0 && (len(s.Trials()) == 0 || (w >= 110 && h >= 30))
	warn := append(warningLines(s, d.panel), d.stabLines...)
	// With the chart hidden, its verdict stays in view: a warning when
	// unstable, a plain line when stable.
	stabLine := ""
	if len(s.probe) > 0 && !showChart && d.stability != "" {
		if strings.HasPrefix(d.stability, "stable") {
			stabLine = st.Muted.Render(truncate("✓ stability check: "+d.stability, w))
		} else {
			warn = append([]string{"stability check: " + d.stability}, warn...)
		}
	}
	logs := s.log
	if w < 110 {
		rows := len(d.panel.metrics)
		// Keep room for the trial stream: shrink the panels on small screens.
		maxRows := max(1, min(rows, (h-8)/2))
		var lines []string
		lines = append(lines, ciPanel(st, d.panel, w, maxRows)...)
		lines = append(lines, seqPanelLines(st, d.panel, w, maxRows)...)
		lines = append(lines, pPanel(st, d.panel, w, maxRows)...)
		// Regimes: the analysed one only on short screens.
		lines = append(lines, regimeLines(st, d.panel, w, map[bool]int{true: 1, false: 3}[h < 30])...)
		if stabLine != "" {
			lines = append(lines, stabLine)
		}
		for i, l := range warn {
			if i >= 3 {
				lines = append(lines, st.Warning.Render(fmt.Sprintf("  … %d more warnings", len(warn)-i)))
				break
			}
			lines = append(lines, st.Warning.Render(truncate("⚠ "+l, w)))
		}
		if n := len(logs); n > 0 {
			lines = append(lines, st.Muted.Render(truncate(logs[n-1], w)))
		}
		rest := h - len(lines)
		if showChart {
			lines = append(chartLines(st, s, d.stability, w, rest), lines...)
		} else {
			lines = append(lines, streamLines(st, s, w, rest)...)
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
		left = append(left, chartLines(st, s, d.stability, lw, ch)...)
	}
	left = append(left, streamLines(st, s, lw, h-len(left))...)
	var right []string
	right = append(right, ciPanel(st, d.panel, rw, 12)...)
	if seq := seqPanelLines(st, d.panel, rw, 12); len(seq) > 0 {
		right = append(right, "")
		right = append(right, seq...)
	}
	right = append(right, "")
	right = append(right, pPanel(st, d.panel, rw, 12)...)
	if rl := regimeLines(st, d.panel, rw, 6); len(rl) > 0 {
		right = append(right, "")
		right = append(right, rl...)
	}
	if stabLine != "" {
		right = append(right, "", truncate(stabLine, rw))
	}
	if len(warn) > 0 {
		right = append(right, "", st.PanelTitle.Render("warnings"))
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
