package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions/plot"
	"github.com/perflab/perflab/sessions/study"
)

// studyFlags are the flags validate and order share.
type studyFlags struct {
	experiment string
	device     repeatedFlag
	access     deviceAccess // --adb and --ssh: opened by load, closed by close
	realtime   bool
	json       bool
	quiet      bool
	parallel   int
	plot       string
}

func (f *studyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.experiment, "experiment", "", "experiment file (builds, trials, order, controls) to study (required)")
	fs.Var(&f.device, "device", "device to study on, as the positional DEVICE; repeatable (or a selector adb:model=MODEL): each run is a pool run over all of them")
	f.access.register(fs)
	fs.BoolVar(&f.realtime, "realtime", false, "pace a simulated device at wall-clock speed")
	fs.BoolVar(&f.json, "json", false, "end with one JSON line on stdout (progress stays on stderr)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress output")
	fs.IntVar(&f.parallel, "parallel", 0, "concurrent runs on sim (default: number of CPUs)")
	fs.StringVar(&f.plot, "plot", "", "also draw the result to `FILE`.svg or .png")
}

// load parses the positional DEVICE and the experiment, opens the --ssh
// tunnels and builds the device opener. When it fails, nothing stays open;
// otherwise the caller calls close.
func (f *studyFlags) load(name string, pos []string, stderr io.Writer) (*lab.Experiment, study.Devices, error) {
	if len(pos) > 1 {
		return nil, study.Devices{}, fmt.Errorf("want one DEVICE, got %q (perflab %s --help)", strings.Join(pos, " "), name)
	}
	if f.experiment == "" {
		return nil, study.Devices{}, fmt.Errorf("--experiment EXP.json is required (perflab %s --help)", name)
	}
	if err := lab.CheckRange("--parallel", f.parallel, 0, lab.MaxParallel); err != nil {
		return nil, study.Devices{}, err
	}
	exp, err := lab.LoadExperiment(f.experiment)
	if err != nil {
		return nil, study.Devices{}, err
	}
	if exp.MultiArm() {
		return nil, study.Devices{}, fmt.Errorf("%s: %s studies a control and a treatment, this experiment has %d builds: keep two (the base and one other) in a copy of the file",
			f.experiment, name, len(exp.ArmKeys()))
	}
	switch {
	case len(pos) == 1 && len(f.device) > 0:
		return nil, study.Devices{}, fmt.Errorf("give the device as DEVICE or with --device, not both (perflab %s --help)", name)
	case len(pos) == 1:
		exp.SetDevices(pos)
	case len(f.device) > 0:
		exp.SetDevices(f.device)
	}
	if err := f.access.open(context.Background()); err != nil {
		return nil, study.Devices{}, accessError{err}
	}
	opt := f.access.options()
	opt.Realtime = f.realtime
	ids, err := devices.Resolve(context.Background(), exp.DeviceList(), opt)
	if err != nil {
		f.access.close() // the caller closes only after a load that worked
		return nil, study.Devices{}, accessError{err}
	}
	if len(ids) > 1 || len(exp.Devices) > 0 {
		exp.SetDevices(nil)
		exp.Devices = ids
		if err := exp.Validate(); err != nil {
			f.access.close()
			return nil, study.Devices{}, err
		}
	}
	return exp, studyPoolDevices(ids, opt, f.parallel), nil
}

// accessError is a failure to reach the --ssh hosts or to find the
// devices (devices.Resolve): exit status 1, as perflab run gives for it,
// not the arguments' 2.
type accessError struct{ error }

func (e accessError) Unwrap() error { return e.error }

// loadCode is the exit status of a failed studyFlags.load: exitError when
// the --ssh hosts could not be reached or the devices not found (as in
// every command taking --ssh or a device), exitUsage for the arguments.
func loadCode(err error) int {
	if errors.As(err, new(accessError)) {
		return exitError
	}
	return exitUsage
}

// close closes the tunnels load opened (none without --ssh).
func (f *studyFlags) close() { f.access.close() }

// studyPoolDevices is studyDevices for one device or a pool: each run of a
// pool opens every device (a lab.DeviceSet, run as a pool), each with its
// own seed.
func studyPoolDevices(ids []string, opt devices.Options, parallel int) study.Devices {
	if len(ids) == 1 {
		return studyDevices(ids[0], opt, parallel)
	}
	sims := true
	for _, id := range ids {
		sims = sims && simTime(id)
	}
	return study.Devices{
		Open: func(ctx context.Context, seed int64) (lab.Device, error) {
			set := &lab.DeviceSet{}
			for i, id := range ids {
				o := opt
				o.Seed = lab.MemberSeed(seed, i)
				d, err := devices.Open(ctx, id, o)
				if err != nil {
					set.Close()
					return nil, err
				}
				set.Members = append(set.Members, d)
			}
			return set, nil
		},
		Fresh:    sims && !opt.Realtime,
		SimTime:  sims,
		Parallel: parallel,
	}
}

// simTime reports whether device id runs on simulated time
// (lab.CapSimTime), known without opening it: such a device is cheap,
// seedable and knows the truth of an injected effect.
func simTime(id string) bool {
	info, ok := devices.Static(id)
	return ok && info.Has(lab.CapSimTime)
}

// studyDevices says how a study of device id gets its devices; perflab
// validate, perflab order and the workbench's study modes share it.
func studyDevices(id string, opt devices.Options, parallel int) study.Devices {
	return study.Devices{
		Open: func(ctx context.Context, seed int64) (lab.Device, error) {
			o := opt
			o.Seed = seed
			return devices.Open(ctx, id, o)
		},
		// Simulated phones are cheap and seedable: a fresh one per run
		// makes runs independent and lets them run in parallel.
		Fresh:    simTime(id) && !opt.Realtime,
		SimTime:  simTime(id),
		Parallel: parallel,
	}
}

// studyProgress prints a study's progress on stderr: a redrawn line on a
// terminal, a line every few seconds otherwise. Failed runs get a line.
type studyProgress struct {
	redrawGate
	w      io.Writer
	quiet  bool
	drawn  bool
	counts map[string]int
}

func newStudyProgress(w io.Writer, quiet bool) *studyProgress {
	return &studyProgress{redrawGate: redrawGate{tty: runIsTTY(w)}, w: w, quiet: quiet, counts: map[string]int{}}
}

func (s *studyProgress) add(p study.Progress) {
	if s.quiet {
		return
	}
	s.counts[p.Outcome]++
	if p.Error != "" {
		if s.tty && s.drawn {
			fmt.Fprint(s.w, "\r\033[K")
		}
		fmt.Fprintf(s.w, "%s run %d failed: %s\n", p.Phase, p.Index+1, p.Error)
		s.drawn = false
	}
	final := p.Done == p.Total
	frac := p.Fraction()
	if !s.due(final, frac) {
		return
	}
	msg := fmt.Sprintf("[%s] %3.0f%% %d/%d runs (%s)  elapsed %s", format.Bar(frac, 20, "#", "."), frac*100, p.Done, p.Total,
		s.summary(), format.Elapsed(p.Elapsed))
	if !final {
		msg += "  ETA " + format.Elapsed(p.ETA)
	}
	if s.tty {
		fmt.Fprint(s.w, "\r\033[K"+msg)
		s.drawn = true
		return
	}
	fmt.Fprintln(s.w, msg)
}

// summary counts the runs' verdicts on the primary metric.
func (s *studyProgress) summary() string {
	var parts []string
	for _, k := range []string{analysis.VerdictNoChange, analysis.VerdictRegression, analysis.VerdictImprovement, analysis.VerdictInconclusive, "failed"} {
		if n := s.counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}

func (s *studyProgress) done() {
	if s.tty && s.drawn {
		fmt.Fprintln(s.w)
		s.drawn = false
	}
}

// studyOutput is a finished (or interrupted) study as its command prints
// it: cmd names the command, what the units that finished.
type studyOutput struct {
	cmd, what string
	err       error // the study was interrupted
	failed    bool  // exit status 3
	json      func(io.Writer) error
	text      func(io.Writer)
	plot      func() *plot.Figure
}

// finish prints a study's result (JSON or text), writes its plot when
// asked, and returns the exit status: 1 when interrupted (the result
// covers what finished), 3 when it failed, else 0.
func (sf *studyFlags) finish(o studyOutput, stdout, stderr io.Writer) int {
	if sf.json {
		if err := o.json(stdout); err != nil {
			fmt.Fprintf(stderr, "perflab %s: %v\n", o.cmd, err)
			return exitError
		}
	} else {
		o.text(stdout)
	}
	if sf.plot != "" && !savePlot(sf.plot, o.plot(), o.cmd, stderr) {
		return exitError
	}
	if o.err != nil {
		fmt.Fprintf(stderr, "perflab %s: interrupted; the result covers the %s that finished: %v\n", o.cmd, o.what, o.err)
		return exitError
	}
	if o.failed {
		return exitRegression
	}
	return exitOK
}
