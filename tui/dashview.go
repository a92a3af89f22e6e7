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

// stateWord says what the run is doing.
func (d *dashboard) stateWord() string {
	s := d.state
	switch {
	case d.mode == modeReplay:
		if d.rp.done() {
			return "replay · at end"
		}
		if d.rp.playing {
			return "replay · playing " + speedLabel(d.rp.speed)
		}
		return "replay · paused " + speedLabel(d.rp.speed)
	case d.starting:
		return "starting"
	case s.end != nil:
		return "ended: " + s.end.Reason
	case d.finished:
		return "stopped"
	case d.quitting:
		return "aborting"
	case s.paused:
		return "paused"
	case len(s.Trials()) == 0 && len(s.probe) > 0:
		return "stability check"
	default:
		return "running"
	}
}

// View draws the dashboard into exactly width × height cells.
func (d *dashboard) View() string {
	w, h := d.width, d.height
	if w <= 0 || h <= 0 {
		return ""
	}
	st := d.st
	s := d.state
	var top []string
	// Line 1: what is being compared and the state.
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
	// The state comes first: on a narrow screen the build names give way.
	head := st.Title.Render(s.device.ID) + " · " + st.Header.Render(d.stateWord())
	if d.mode != modeCheck {
		head += " · order " + s.order + " · A " + buildName(lab.ArmControl) + " vs B " + buildName(lab.ArmTreatment)
	}
	top = append(top, truncate(head, w))
	// Line 2: progress and ETA.
	if d.mode != modeCheck {
		p := s.Progress()
		info := fmt.Sprintf(" %d/%d", p.Done, p.Total)
		if p.Failed > 0 {
			info += fmt.Sprintf(" · %d failed", p.Failed)
		}
		info += " · " + fmtDur(p.Elapsed)
		if p.ETA > 0 && s.end == nil && d.mode == modeLive {
			info += " · ETA " + fmtDur(p.ETA)
		}
		if d.mode == modeReplay {
			info += fmt.Sprintf(" · event %d/%d", d.rp.pos, len(d.rp.events))
		}
		barW := max(10, min(40, w-len(info)-2))
		top = append(top, truncate(progressBar(st, p.Fraction(), barW)+info, w))
	}
	// Bottom line: prompt, confirmation, error or status.
	var bottom string
	switch {
	case d.confirmAbort:
		q := "abort the run? the session keeps every finished trial (y/N)"
		if d.mode == modeCheck {
			q = "stop the check? (y/N)"
		}
		bottom = st.Warning.Render(q)
	case d.noting:
		bottom = d.note.View()
	case d.err != nil:
		bottom = st.Error.Render(d.err.Error())
	default:
		bottom = st.Muted.Render(d.status)
	}
	bodyH := h - len(top) - 1
	var body string
	if d.editing {
		body = st.PanelTitle.Render("controls from the next round (enter applies, esc cancels)") + "\n" + d.ctrl.View()
	} else {
		body = d.body(w, bodyH)
	}
	return strings.Join(top, "\n") + "\n" + block(body, w, bodyH) + "\n" + pad(truncate(bottom, w), w)
}

// body lays the panels out: one column below 110 cells, two above.
func (d *dashboard) body(w, h int) string {
	st := d.st
	s := d.state
	if d.mode == modeCheck {
		// The reasons are wrapped, not cut: they are the verdict's why.
		var why []string
		for _, l := range d.stabLines {
			why = append(why, wrapWords(l, w, 3)...)
		}
		lines := chartLines(st, s, d.stability, w, max(4, h-len(why)-1))
		return strings.Join(append(lines, why...), "\n")
	}
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
