package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// progressPrinter shows progress and an ETA on stderr: one line redrawn in
// place on a terminal, a line every few seconds otherwise. Failed trials
// and live changes always get a line of their own.
type progressPrinter struct {
	redrawGate
	w     io.Writer
	quiet bool
	fold  *engine.Fold
	drawn bool
}

// redrawGate paces progress lines: ten redraws a second on a terminal; in
// a log a line every 5 s or every 10% of the work, so CI logs stay short.
type redrawGate struct {
	tty      bool
	last     time.Time
	lastFrac float64
}

// due reports whether to draw now, and if so remembers the draw.
func (g *redrawGate) due(final bool, frac float64) bool {
	now := time.Now()
	if g.tty {
		if !final && now.Sub(g.last) < 100*time.Millisecond {
			return false
		}
	} else if !final && now.Sub(g.last) < 5*time.Second && frac-g.lastFrac < 0.1 {
		return false
	}
	g.last, g.lastFrac = now, frac
	return true
}

// newProgressPrinter draws the progress of fold, which the caller feeds.
func newProgressPrinter(w io.Writer, fold *engine.Fold, quiet bool) *progressPrinter {
	return &progressPrinter{redrawGate: redrawGate{tty: runIsTTY(w)}, w: w, quiet: quiet, fold: fold}
}

func runIsTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progressPrinter) add(e lab.Event) {
	if p.quiet {
		return
	}
	switch {
	case e.Trial != nil && e.Trial.Status != lab.StatusOK:
		p.line(fmt.Sprintf("trial %d (%s) %s: %s", e.Trial.Index, e.Trial.Arm, e.Trial.Status, e.Trial.Reason))
	case e.Toggle != nil:
		p.line(fmt.Sprintf("%s: %s → %s from round %d", e.Toggle.What, e.Toggle.From, e.Toggle.To, e.Toggle.Round))
	case e.Note != nil:
		p.line("note: " + e.Note.Text)
	case e.End != nil:
		p.draw(true)
		return
	}
	if e.Trial != nil {
		p.draw(false)
	}
}

// line prints a message on its own line, keeping the progress line below.
func (p *progressPrinter) line(msg string) {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, msg)
	p.drawn = false
}

func (p *progressPrinter) draw(final bool) {
	pr := p.fold.Progress()
	frac := pr.Fraction()
	if !p.due(final, frac) {
		return
	}
	counted := fmt.Sprintf("control %d, treatment %d", pr.Counted[lab.ArmControl], pr.Counted[lab.ArmTreatment])
	if _, ab := pr.Counted[lab.ArmControl]; !ab && len(pr.Counted) > 0 {
		var per []string
		for _, k := range slices.Sorted(maps.Keys(pr.Counted)) {
			per = append(per, fmt.Sprintf("%s %d", k, pr.Counted[k]))
		}
		counted = strings.Join(per, ", ")
	}
	msg := fmt.Sprintf("[%s] %3.0f%% %d/%d trials (%s counted", format.Bar(frac, 20, "#", "."), frac*100,
		pr.Done, pr.Total, counted)
	if pr.Failed > 0 {
		msg += fmt.Sprintf(", %d failed", pr.Failed)
	}
	msg += ")  elapsed " + format.Elapsed(pr.Elapsed)
	if !final && pr.Done > 0 {
		msg += "  ETA " + format.Elapsed(pr.ETA)
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K"+msg)
		p.drawn = true
		if final {
			fmt.Fprintln(p.w)
			p.drawn = false
		}
		return
	}
	fmt.Fprintln(p.w, msg)
}

func (p *progressPrinter) done() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}
