package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/check"
	"github.com/perflab/perflab/lab/devices"
)

// percentFlag is a flag holding a percentage written as "2%" or "2".
type percentFlag struct{ p *float64 }

func (f percentFlag) String() string {
	if f.p == nil {
		return "0%"
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64) + "%"
}

func (f percentFlag) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%")), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("want a percentage of at least 0 such as 2%% or 0.5, got %q", s)
	}
	*f.p = v
	return nil
}

// repeatedFlag is a repeatable string flag.
type repeatedFlag []string

func (l *repeatedFlag) String() string { return strings.Join(*l, ",") }

func (l *repeatedFlag) Set(s string) error { *l = append(*l, s); return nil }

// parseInterleaved parses flags that may come before, between or after the
// positional arguments and returns the positionals.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseCommandFlags parses a command's flags and positional arguments.
// --help prints usage on stdout (exit 0); a bad flag gets a hint on stderr
// (exit 2). ok is false when the command should return code at once.
func parseCommandFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	pos, err := parseInterleaved(fs, args)
	switch {
	case err == nil:
		return pos, exitOK, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
		return nil, exitOK, false
	}
	fmt.Fprintf(stderr, "see: perflab %s --help\n", fs.Name())
	return nil, exitUsage, false
}

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
	access   deviceAccess // --adb and --ssh: opened by open, closed by close
}

func addProbeFlags(fs *flag.FlagSet, durHelp string) *probeFlags {
	f := &probeFlags{
		name:     fs.Name(),
		dur:      fs.Duration("duration", 0, durHelp),
		interval: fs.Duration("interval", time.Second, "probe sample interval"),
		realtime: fs.Bool("realtime", false, "pace simulated devices at wall-clock speed"),
		seed:     fs.Int64("seed", 1, "seed of simulated devices"),
	}
	f.access.register(fs)
	return f
}

// open checks the shared flags and opens the device; the caller closes it.
// code is non-negative when the command should exit with it.
func (f *probeFlags) open(ctx context.Context, id string, stderr io.Writer) (dev lab.Device, window time.Duration, code int) {
	if *f.interval <= 0 || *f.dur < 0 {
		fmt.Fprintf(stderr, "perflab %s: --interval must be positive and --duration not negative\n", f.name)
		return nil, 0, 2
	}
	if err := errors.Join(lab.CheckDuration("--duration", *f.dur), lab.CheckDuration("--interval", *f.interval)); err != nil {
		fmt.Fprintf(stderr, "perflab %s: %v\n", f.name, err)
		return nil, 0, 2
	}
	if !f.access.openOr(ctx, "perflab "+f.name, stderr) {
		return nil, 0, exitError
	}
	opt := f.access.options()
	opt.Realtime, opt.Seed = *f.realtime, *f.seed
	dev, err := devices.Open(ctx, id, opt)
	if err != nil {
		f.access.close()
		fmt.Fprintf(stderr, "perflab %s: %v\n", f.name, err)
		return nil, 0, 1
	}
	window = *f.dur
	if window == 0 {
		window = check.DefaultDuration(dev)
	}
	// Settings a killed perflab left are restored (and said so) first.
	if g, err := check.GovernorFor(dev); err == nil {
		for _, n := range check.RepairLeftover(ctx, g) {
			fmt.Fprintf(stderr, "perflab %s: %s\n", f.name, n)
		}
	}
	return dev, window, -1
}

// close closes the device open returned, then the tunnels it went through.
func (f *probeFlags) close(dev lab.Device) {
	dev.Close()
	f.access.close()
}
