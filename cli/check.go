package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/guptarohit/asciigraph"
	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/check"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/sessions/plot"
)

const checkUsage = `
Usage: perflab check DEVICE [--profile P] [--duration D] [--json] [--realtime]

Runs the MFLOPS stability probe (a matrix multiply on every core) and says
whether performance is stable: mean, coefficient of variation, drift per
minute, step changes, thermal throttle events, and a verdict with reasons.
A governor profile given with --profile is applied first, verified by
reading every file back, and the original settings are restored afterwards
(unless --keep). They are saved on the device and on this host first, so if
perflab is killed, the next perflab command on the device restores them.

In a terminal the MFLOPS chart is drawn live; with --json every sample is a
JSON line {"t","mflops","freq_khz","temp_c"} and the last line is
{"summary":{"verdict","mean_mflops","cv","drift_pct_per_min","steps",
"throttle_events","reasons"}}.

Profiles: "recommended" (what perflab tune saved for the model, else the
sim preset's built-in), "stock", "max" (sim: every cluster at its top
frequency), a .json file, or an inline JSON profile.

Simulated phones run on simulated time: a ten-minute check takes well under
a second unless --realtime. On local the probe runs for real.

Exit status: 0 stable, 3 unstable, 1 error, 2 usage.

Examples:
  perflab check sim:pixel                         # stock settings: throttles
  perflab check sim:pixel --profile recommended   # locked below the trip point
  perflab check sim:nexus5 --profile max --json | tail -1
  perflab check local --duration 30s

Manual: docs/devices.md
`

// cmdCheck runs a stability check.
func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newDeviceFlagSet("check", stderr, checkUsage)
	profile := fs.String("profile", "", "governor profile to apply first (name, .json file or inline JSON)")
	pf := addProbeFlags(fs, "check window (default 10m on phones and sim, 1m on local)")
	size := fs.Int("size", 0, "probe matrix order (default 256)")
	asJSON := fs.Bool("json", false, "JSON lines: one per sample, then the summary")
	keep := fs.Bool("keep", false, "leave the profile applied afterwards")
	plotFile := fs.String("plot", "", "also draw MFLOPS over time to `FILE`.svg or .png")
	pos, code := parseDeviceCommand(fs, args, stderr, 1, 1)
	if code >= 0 {
		return code
	}
	if err := lab.CheckRange("--size", *size, 0, lab.MaxProbeSize); err != nil {
		fmt.Fprintln(stderr, "perflab check:", err)
		return exitUsage
	}
	dev, window, code := pf.open(ctx, pos[0], stderr)
	if code >= 0 {
		return code
	}
	defer pf.close(dev)
	info := dev.Info()
	interval, realtime := pf.interval, pf.realtime
	prof, err := check.ResolveProfile(dev, *profile)
	if err != nil {
		fmt.Fprintln(stderr, "perflab check:", err)
		return 1
	}

	var view checkView
	if *asJSON {
		view = &jsonCheckView{w: stdout}
	} else {
		view = newTextCheckView(stdout, info, window, *interval)
	}
	if prof != nil && !*asJSON {
		fmt.Fprintf(stdout, "%s: applying %s\n", info.ID, governor.Describe(*prof))
	}
	samples := make(chan lab.ProbeSample, 64)
	done := make(chan struct{})
	go func() {
		for s := range samples {
			view.sample(s)
		}
		close(done)
	}()
	res, err := check.Run(ctx, dev, check.Options{Resolved: prof, Duration: window, Interval: *interval,
		Size: *size, Realtime: *realtime, Keep: *keep}, samples)
	close(samples)
	<-done
	for _, n := range res.Notes {
		fmt.Fprintln(stderr, "perflab check:", n)
	}
	for _, m := range res.Mismatches {
		fmt.Fprintln(stderr, "perflab check: read-back differs:", m)
	}
	if err != nil && len(res.Samples) == 0 {
		fmt.Fprintln(stderr, "perflab check:", err)
		return 1
	}
	view.summary(res)
	title := fmt.Sprintf("check on %s: %s", info.ID, res.Stability.Verdict)
	if !savePlot(*plotFile, plot.Check(res.Samples, title), "check", stderr) {
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "perflab check: stopped after %d samples: %v\n", len(res.Samples), err)
		return 1
	}
	if prof != nil && !*asJSON {
		switch {
		case res.Restored:
			fmt.Fprintln(stdout, "original governor settings restored")
		case *keep || prof.Keep:
			fmt.Fprintln(stdout, "profile left applied (--keep)")
		}
	}
	if !res.Stability.Stable() {
		return exitUnstable
	}
	return 0
}

// checkView shows a check as it runs.
type checkView interface {
	sample(lab.ProbeSample)
	summary(check.Result)
}

// jsonSample is the --json line of one sample: freq_khz is always an array
// and temp_c null when no sensor was read.
type jsonSample struct {
	T       float64  `json:"t"`
	MFLOPS  float64  `json:"mflops"`
	FreqKHz []int    `json:"freq_khz"`
	TempC   *float64 `json:"temp_c"`
}

type jsonCheckView struct{ w io.Writer }

func (v *jsonCheckView) sample(s lab.ProbeSample) {
	js := jsonSample{T: s.T, MFLOPS: s.MFLOPS, FreqKHz: s.FreqKHz}
	if js.FreqKHz == nil {
		js.FreqKHz = []int{}
	}
	if s.TempC != 0 {
		t := s.TempC
		js.TempC = &t
	}
	b, _ := json.Marshal(js)
	fmt.Fprintln(v.w, string(b))
}

func (v *jsonCheckView) summary(r check.Result) {
	b, _ := json.Marshal(struct {
		Summary analysis.Stability `json:"summary"`
	}{r.Stability})
	fmt.Fprintln(v.w, string(b))
}

// textCheckView draws a live asciigraph chart on a terminal, or prints a
// progress line every minute of device time elsewhere.
type textCheckView struct {
	w        io.Writer
	tty      bool
	width    int
	info     lab.DeviceInfo
	total    int
	xs       []float64
	last     lab.ProbeSample
	drawn    int // lines of the previous frame
	lastDraw time.Time
	nextLine float64
}

func newTextCheckView(w io.Writer, info lab.DeviceInfo, window, interval time.Duration) *textCheckView {
	v := &textCheckView{w: w, tty: runIsTTY(w), width: 80, info: info, total: int(window / interval), nextLine: 60}
	if f, ok := w.(*os.File); ok && v.tty {
		if cols, _, err := term.GetSize(f.Fd()); err == nil && cols > 20 {
			v.width = cols
		}
	}
	return v
}

func (v *textCheckView) sample(s lab.ProbeSample) {
	v.xs = append(v.xs, s.MFLOPS)
	v.last = s
	if v.tty {
		if time.Since(v.lastDraw) >= 100*time.Millisecond {
			v.draw(false)
		}
		return
	}
	if s.T >= v.nextLine {
		fmt.Fprintf(v.w, "t=%4.0fs  %s\n", s.T, sampleLine(s))
		v.nextLine += 60
	}
}

func sampleLine(s lab.ProbeSample) string {
	line := fmt.Sprintf("%8.0f MFLOPS", s.MFLOPS)
	if len(s.FreqKHz) > 0 {
		var f []string
		for _, k := range s.FreqKHz {
			f = append(f, fmt.Sprint(k/1000))
		}
		line += "  " + strings.Join(f, "/") + " MHz"
	}
	if s.TempC != 0 {
		line += fmt.Sprintf("  %.1f °C", s.TempC)
	}
	return line
}

func (v *textCheckView) chart() string {
	width := v.width - 12
	if width < 20 {
		width = 20
	}
	xs := v.xs
	if len(xs) == 1 {
		xs = []float64{xs[0], xs[0]}
	}
	pct := 100.0
	if v.total > 0 {
		pct = 100 * float64(len(v.xs)) / float64(v.total)
	}
	caption := fmt.Sprintf("%s  t=%.0fs %s  %3.0f%%", v.info.ID, v.last.T, sampleLine(v.last), pct)
	// Show at least ±5% around the mean so a stable run looks flat rather
	// than magnifying its noise to full height.
	var mean float64
	for _, x := range v.xs {
		mean += x
	}
	mean /= float64(len(v.xs))
	return asciigraph.Plot(xs, asciigraph.Height(12), asciigraph.Width(width), asciigraph.Precision(0),
		asciigraph.LowerBound(0.95*mean), asciigraph.UpperBound(1.05*mean), asciigraph.Caption(caption))
}

func (v *textCheckView) draw(final bool) {
	if len(v.xs) == 0 {
		return
	}
	frame := v.chart()
	if v.drawn > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", v.drawn) // back to the top of the previous frame
	}
	fmt.Fprintln(v.w, frame)
	v.drawn = strings.Count(frame, "\n") + 1
	v.lastDraw = time.Now()
}

func (v *textCheckView) summary(r check.Result) {
	if v.tty {
		v.draw(true)
	} else if len(v.xs) > 0 {
		fmt.Fprintln(v.w, v.chart())
	}
	writeStability(v.w, r.Stability)
}

func writeStability(w io.Writer, s analysis.Stability) {
	fmt.Fprintf(w, "\nverdict: %s\n", s.Verdict)
	fmt.Fprintf(w, "  %d samples over %.0fs · mean %.0f MFLOPS · CV %.2f%% · drift %+.2f%%/min · %d step(s) · %d throttle event(s)",
		s.N, s.DurationS, s.MeanMFLOPS.Or(0), 100*s.CV.Or(0), s.DriftPctPerMin.Or(0), len(s.Steps), s.ThrottleEvents)
	if s.MaxTempC > 0 {
		fmt.Fprintf(w, " · max %.1f °C", s.MaxTempC)
	}
	fmt.Fprintln(w)
	for _, r := range s.Reasons {
		fmt.Fprintln(w, "  -", r)
	}
}
