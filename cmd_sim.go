package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/guptarohit/asciigraph"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/check"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/governor"
)

// Exit statuses of check and tune beyond 0 (stable / recommended), 1 (error)
// and 2 (usage).
const exitUnstable = 3

// newDeviceFlagSet is a flag set whose usage prints the command help.
func newDeviceFlagSet(name string, stderr io.Writer, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, strings.TrimLeft(usage, "\n"))
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseDeviceCommand parses interleaved flags and returns the positionals; code is
// non-negative when the command should exit at once (help or usage error).
func parseDeviceCommand(fs *flag.FlagSet, args []string, stderr io.Writer, minPos, maxPos int) ([]string, int) {
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, 0
	}
	if err != nil {
		return nil, 2
	}
	if len(pos) < minPos || len(pos) > maxPos {
		if len(pos) < minPos {
			fmt.Fprintf(stderr, "perflab %s: missing DEVICE (see perflab devices)\n\n", fs.Name())
		} else {
			fmt.Fprintf(stderr, "perflab %s: unexpected arguments %q\n\n", fs.Name(), pos[maxPos:])
		}
		fs.Usage()
		return nil, 2
	}
	return pos, -1
}

// probeFlags are the flags check and tune share.
type probeFlags struct {
	name     string
	dur      *time.Duration
	interval *time.Duration
	realtime *bool
	seed     *int64
	adb      *[]string
}

func addProbeFlags(fs *flag.FlagSet, durHelp string) *probeFlags {
	return &probeFlags{
		name:     fs.Name(),
		dur:      fs.Duration("duration", 0, durHelp),
		interval: fs.Duration("interval", time.Second, "probe sample interval"),
		realtime: fs.Bool("realtime", false, "pace simulated devices at wall-clock speed"),
		seed:     fs.Int64("seed", 1, "seed of simulated devices"),
		adb:      addADBFlag(fs),
	}
}

// open checks the shared flags and opens the device; the caller closes it.
// code is non-negative when the command should exit with it.
func (f *probeFlags) open(ctx context.Context, id string, stderr io.Writer) (dev lab.Device, window time.Duration, code int) {
	if *f.interval <= 0 || *f.dur < 0 {
		fmt.Fprintf(stderr, "perflab %s: --interval must be positive and --duration not negative\n", f.name)
		return nil, 0, 2
	}
	dev, err := devices.Open(ctx, id, devices.Options{Realtime: *f.realtime, Seed: *f.seed, ADBServers: *f.adb})
	if err != nil {
		fmt.Fprintf(stderr, "perflab %s: %v\n", f.name, err)
		return nil, 0, 1
	}
	window = *f.dur
	if window == 0 {
		window = check.DefaultDuration(dev.Info())
	}
	return dev, window, -1
}

const devicesUsage = `
Usage: perflab devices [--json] [--adb HOST:PORT]...

Lists the devices perflab can run on: the built-in simulated phones
(sim:<preset>), this host (local) and phones on adb servers, each with its
model, state and capabilities (what the controls stepper can switch on).
A capability a device lacks comes with a note saying why.

Examples:
  perflab devices
  perflab devices --json | jq -r '.[].id'
  perflab devices --adb 127.0.0.1:5037 --adb lab7:5037   # phones on two hosts
`

// cmdDevices lists devices.
func cmdDevices(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newDeviceFlagSet("devices", stderr, devicesUsage)
	asJSON := fs.Bool("json", false, "print a JSON array of devices")
	adb := addADBFlag(fs)
	if _, code := parseDeviceCommand(fs, args, stderr, 0, 0); code >= 0 {
		return code
	}
	list, err := devices.List(ctx, devices.Options{ADBServers: *adb})
	for i := range list {
		list[i] = check.DescribeLocal(ctx, list[i])
	}
	if err != nil {
		// One backend failing (no adb server) does not hide the others.
		fmt.Fprintln(stderr, "perflab devices:", err)
	}
	if *asJSON {
		if list == nil {
			list = []lab.DeviceInfo{}
		}
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		writeDeviceTable(stdout, list)
	}
	if len(list) == 0 {
		return 1
	}
	return 0
}

func writeDeviceTable(w io.Writer, list []lab.DeviceInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODEL\tSTATE\tCAPABILITIES")
	for _, d := range list {
		model := d.Model
		if model == "" {
			model = "-"
		}
		state := d.State
		if state == "" {
			state = "device"
		}
		caps := append([]string(nil), d.Caps...)
		sort.Strings(caps)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.ID, model, state, strings.Join(caps, " "))
	}
	tw.Flush()
	for _, d := range list {
		if desc := d.Props["description"]; desc != "" {
			fmt.Fprintf(w, "%s: %s\n", d.ID, desc)
		}
		if d.Server != "" {
			fmt.Fprintf(w, "%s: on adb server %s\n", d.ID, d.Server)
		}
		for _, n := range d.Notes {
			fmt.Fprintf(w, "%s: %s\n", d.ID, n)
		}
	}
}

const checkUsage = `
Usage: perflab check DEVICE [--profile P] [--duration D] [--json] [--realtime]

Runs the MFLOPS stability probe (a matrix multiply on every core) and says
whether performance is stable: mean, coefficient of variation, drift per
minute, step changes, thermal throttle events, and a verdict with reasons.
A governor profile given with --profile is applied first, verified by
reading every file back, and the original settings are restored afterwards
(unless --keep).

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
`

// cmdCheck runs a stability check.
func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newDeviceFlagSet("check", stderr, checkUsage)
	profile := fs.String("profile", "", "governor profile to apply first (name, .json file or inline JSON)")
	pf := addProbeFlags(fs, "check window (default 10m on phones and sim, 1m on local)")
	size := fs.Int("size", 0, "probe matrix order (default 256)")
	asJSON := fs.Bool("json", false, "JSON lines: one per sample, then the summary")
	keep := fs.Bool("keep", false, "leave the profile applied afterwards")
	pos, code := parseDeviceCommand(fs, args, stderr, 1, 1)
	if code >= 0 {
		return code
	}
	dev, window, code := pf.open(ctx, pos[0], stderr)
	if code >= 0 {
		return code
	}
	defer dev.Close()
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
	for _, m := range res.Mismatches {
		fmt.Fprintln(stderr, "perflab check: read-back differs:", m)
	}
	if err != nil && len(res.Samples) == 0 {
		fmt.Fprintln(stderr, "perflab check:", err)
		return 1
	}
	view.summary(res)
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

const tuneUsage = `
Usage: perflab tune DEVICE [--json] [--duration D] [--steps N]

Finds governor settings under which a device model performs stably, as
MobileLab did for each new phone model: it checks the stock settings, then
every candidate profile (governors × frequency steps per cluster, with
thermal core control, input boost and mpdecision off and the GPU locked),
each for the whole window after a cool-down, and recommends the profile
with the highest mean MFLOPS that stays stable. The result is saved as
<model>.json in the perflab/profiles directory of your config directory;
experiments then use it with "governor": "recommended".

With --json the last line is {"recommended":{...},"candidates":[{"profile",
"summary"}, ...]}; progress goes to stderr.

Exit status: 0 a profile was recommended, 3 none was stable, 1 error.

Examples:
  perflab tune sim:pixel
  perflab tune sim:nexus5 --json | tail -1 | jq .recommended
  perflab tune local --duration 2m --steps 4 --cooldown 30s
`

// cmdTune sweeps governor profiles.
func cmdTune(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newDeviceFlagSet("tune", stderr, tuneUsage)
	asJSON := fs.Bool("json", false, "end with the result as one JSON line (progress to stderr)")
	pf := addProbeFlags(fs, "check window per candidate (default 10m on phones and sim, 1m on local)")
	steps := fs.Int("steps", 6, "frequencies tried per cluster")
	cooldown := fs.Duration("cooldown", 0, "idle time before each candidate (default 3m on sim and phones, 30s on local)")
	noSave := fs.Bool("no-save", false, "do not save the recommendation")
	pos, code := parseDeviceCommand(fs, args, stderr, 1, 1)
	if code >= 0 {
		return code
	}
	if *steps < 1 || *cooldown < 0 {
		fmt.Fprintln(stderr, "perflab tune: --steps must be positive and --cooldown not negative")
		return 2
	}
	dev, window, code := pf.open(ctx, pos[0], stderr)
	if code >= 0 {
		return code
	}
	defer dev.Close()
	info := dev.Info()
	interval, realtime := pf.interval, pf.realtime
	cool := *cooldown
	if cool == 0 {
		cool = 3 * time.Minute
		if info.Backend == "local" {
			cool = 30 * time.Second
		}
	}
	progressW := stdout
	if *asJSON {
		progressW = stderr
	}
	fmt.Fprintf(progressW, "tuning %s (%s): %s per candidate, %s cool-down; every candidate turns thermal core control,\n"+
		"input boost and mpdecision off and locks the GPU\n", info.ID, info.Model, window, cool)
	res, err := check.Tune(ctx, dev, check.TuneOptions{Duration: window, Interval: *interval, Steps: *steps,
		Cooldown: cool, Realtime: *realtime}, func(p check.Progress) {
		c := p.Candidate
		desc := governor.DescribeCPU(c.Profile)
		if c.Profile.Name == "stock" {
			desc = "stock: " + governor.Describe(c.Profile)
		}
		fmt.Fprintf(progressW, "[%*d/%d] %-9s %8.0f MFLOPS  CV %5.2f%%  %s\n", len(fmt.Sprint(p.Total)), p.Done, p.Total,
			c.Summary.Verdict, c.Summary.MeanMFLOPS.Or(0), 100*c.Summary.CV.Or(0), desc)
	})
	if err != nil && !errors.Is(err, check.ErrNoStable) {
		fmt.Fprintln(stderr, "perflab tune:", err)
		return 1
	}
	if *asJSON {
		if res.Candidates == nil {
			res.Candidates = []check.Candidate{}
		}
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
	}
	if res.Recommended == nil {
		fmt.Fprintf(stderr, "perflab tune: no candidate was stable on %s; try a longer --cooldown or more --steps\n", info.ID)
		return exitUnstable
	}
	best := bestCandidate(res)
	if !*asJSON {
		fmt.Fprintf(stdout, "\nrecommended: %s\n", governor.Describe(*res.Recommended))
		fmt.Fprintf(stdout, "  %.0f MFLOPS, CV %.2f%%, stable for %s", best.Summary.MeanMFLOPS.Or(0), 100*best.Summary.CV.Or(0), window)
		if stock := res.Candidates[0]; stock.Profile.Name == "stock" {
			fmt.Fprintf(stdout, " (stock settings: %s, %.0f MFLOPS)", stock.Summary.Verdict, stock.Summary.MeanMFLOPS.Or(0))
		}
		fmt.Fprintln(stdout)
	}
	if !*noSave {
		path, err := check.Save(dev, res, window)
		if err != nil {
			fmt.Fprintln(stderr, "perflab tune: saving:", err)
			return 1
		}
		fmt.Fprintf(progressW, "saved %s (use \"governor\": \"recommended\" in experiments on %s)\n", path, info.Model)
	}
	return 0
}

// bestCandidate finds the candidate the recommendation came from.
func bestCandidate(res check.TuneResult) check.Candidate {
	want, _ := json.Marshal(res.Recommended.Clusters)
	for _, c := range res.Candidates {
		if got, _ := json.Marshal(c.Profile.Clusters); string(got) == string(want) && c.Summary.Stable() {
			return c
		}
	}
	return check.Candidate{}
}
