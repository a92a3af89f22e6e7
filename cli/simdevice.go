package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/sim"
	"github.com/perflab/perflab/lab/simdevice"
)

const simdeviceUsage = `Usage: perflab simdevice [--listen 127.0.0.1:PORT] [--count N] [--preset P] [flags]

Serves a simulated phone as an adb device over TCP: Debian's (or Google's)
adb server connects to it with "adb connect", and from then on it is a phone
like any other: adb shell (with exit codes), push, pull, reverse, and
perflab's adb backend (adb:SERIAL) run on it unchanged. Its shell answers
like Android's toybox/mksh: getprop, setprop, stop/start, cat/echo on the
cpufreq sysfs files, su -c, am start -W, pm install/path/clear, input
keyevent, dumpsys window, mount -t tmpfs, the pushed perflab probe,
simpleperf record --app and report-sample (samples of the sim apps' call
trees, for "profile": true), ...

The sim builds are installed as packages org.perflab.sim.APP (plus
.pEFFECT / .mEFFECT for builds with a known effect), so sim experiments run
unchanged against it with --device adb:SERIAL.

--count N serves a lab of N phones of the preset's model on N consecutive
free ports, the first block at or above --listen's port (5037 and 5554-5585
are skipped). Like real units of one model, each has its own serial
(SERIAL-1 .. SERIAL-N), its own noise (seeds SEED .. SEED+N-1) and its own
speed: phone i is slowed by spread*(i-1)/(N-1), so phone 1 runs at the
model's speed and phone N is --spread slower (getprop perflab.sim.slowdown
tells). --connect connects every one of them. adb names each HOST:PORT:
use them as adb:127.0.0.1:PORT.

Stop it with Ctrl-C; the adb servers given with --connect then forget the
devices (others show them offline).

The device has no authentication (it accepts every adb key), so --listen
takes only a loopback address unless --allow-remote is given, and then warns.
The simulated phone itself reaches only its loopback: ports the host
reversed with adb reverse (perflab-http-get and the apps' fetches through
the http_proxy setting); any other address is refused.

Examples:
  perflab simdevice --listen 127.0.0.1:6520 --preset pixel
  adb connect 127.0.0.1:6520 && adb -s 127.0.0.1:6520 shell getprop ro.product.model
  perflab simdevice --listen 127.0.0.1:6520 --connect 127.0.0.1:5037
  perflab run example:sim-controls-on --device adb:127.0.0.1:6520 --headless
  perflab simdevice --listen 127.0.0.1:6520 --count 4 --spread 0.1 --connect 127.0.0.1:5037

Manual: docs/adb.md

Flags:
`

// cmdSimdevice serves simulated phones over the adb wire protocol.
func cmdSimdevice(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simdevice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:6520", "address to serve the device on (avoid 5554-5585: adb scans them for emulators); loopback only unless --allow-remote; with --count, the first port tried")
	count := fs.Int("count", 1, "how many phones to serve, on consecutive free ports")
	spread := fs.Float64("spread", 0.03, "with --count N > 1: how much slower (a fraction) the last phone is than the first; the others lie evenly between")
	allowRemote := fs.Bool("allow-remote", false, "let --listen bind a non-loopback address: anyone who reaches it gets an unauthenticated adb device")
	preset := fs.String("preset", "pixel", "sim preset: "+strings.Join(sim.PresetNames(), ", "))
	serial := fs.String("serial", "", "value of ro.serialno (adb itself names TCP devices HOST:PORT); with --count, SERIAL-1 .. SERIAL-N")
	seed := fs.Int64("seed", 1, "seed of the simulated phone's noise; with --count, phone i gets SEED+i-1")
	root := fs.Bool("root", false, "adbd runs as root (otherwise root needs su -c, as on a rooted phone)")
	realtime := fs.Bool("realtime", false, "launches and probe runs take wall-clock time")
	unauthorized := fs.Bool("unauthorized", false, "never accept the host's key, so adb lists the device as unauthorized (for trying perflab's handling)")
	noSimpleperf := fs.Bool("no-simpleperf", false, "the phone has no simpleperf, as phones before Android 7.0 (the nexus5 preset has none either): profiled runs go on without profiles")
	var connect repeatedFlag
	fs.Var(&connect, "connect", "ask the adb server at HOST:PORT to connect to the devices (repeatable)")
	verbose := fs.Bool("v", false, "log protocol events to stderr")
	fs.Usage = func() { fmt.Fprint(stderr, simdeviceUsage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "perflab simdevice: unexpected argument %q (perflab simdevice --help)\n", pos[0])
		return exitUsage
	}
	if *count < 1 || *count > 256 {
		fmt.Fprintf(stderr, "perflab simdevice: --count %d: want 1 to 256 phones\n", *count)
		return exitUsage
	}
	base := simdevice.Options{Preset: *preset, Seed: *seed, Root: *root, Realtime: *realtime, Unauthorized: *unauthorized, Serial: *serial,
		NoSimpleperf: *noSimpleperf}
	if *verbose {
		base.Logf = log.New(stderr, "", log.Ltime|log.Lmicroseconds).Printf
	}
	units, err := simdevice.Units(base, *count, *spread)
	if err != nil {
		fmt.Fprintf(stderr, "perflab simdevice: --spread: %v\n", err)
		return exitUsage
	}
	if err := simdevice.CheckListen(*listen); errors.Is(err, simdevice.ErrExposed) {
		if !*allowRemote {
			fmt.Fprintf(stderr, "perflab simdevice: --listen: %v\n  listen on 127.0.0.1 (reach it from elsewhere with an ssh tunnel), or pass --allow-remote if you mean it\n", err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "perflab simdevice: WARNING: --listen: %v\n"+
			"perflab simdevice: WARNING: serving it anyway (--allow-remote); stop it when you are done\n", err)
	} else if err != nil {
		fmt.Fprintf(stderr, "perflab simdevice: %v\n", err)
		return exitUsage
	}
	sims := make([]*simdevice.Sim, len(units))
	for i, o := range units {
		if sims[i], err = simdevice.New(o); err != nil {
			fmt.Fprintf(stderr, "perflab simdevice: %v\n", err)
			return exitUsage
		}
	}
	lns, err := simdevice.ListenConsecutive(*listen, len(sims))
	if err != nil {
		fmt.Fprintf(stderr, "perflab simdevice: %v\n", err)
		return exitError
	}
	addrs := make([]string, len(sims))
	for i, s := range sims {
		addrs[i] = s.Server.UseListener(lns[i]).String()
		ph := s.Phone
		fmt.Fprintf(stdout, "perflab simdevice: %s (%s, %s) serial %s", *preset, ph.Prop("ro.product.model"), ph.Preset().ABI,
			s.Shell.Prop("ro.serialno"))
		if len(sims) > 1 {
			fmt.Fprintf(stdout, ", seed %d, slowdown %s", units[i].Seed, strconv.FormatFloat(ph.Slowdown(), 'f', 4, 64))
		}
		fmt.Fprintf(stdout, " listening on %s\n", addrs[i])
	}
	if len(sims) == 1 {
		fmt.Fprintf(stdout, "connect with: adb connect %s   (then use device adb:%s)\n", addrs[0], addrs[0])
	} else {
		fmt.Fprintf(stdout, "connect with: for a in %s; do adb connect $a; done   (then use devices adb:HOST:PORT)\n", strings.Join(addrs, " "))
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, len(sims))
	for _, s := range sims {
		go func() {
			err := s.Server.Serve(ctx)
			stop() // one phone's listener failing ends them all
			errc <- err
		}()
	}
	type link struct{ server, addr string }
	var connected []link
	for _, server := range connect {
		for _, addr := range addrs {
			msg, err := adb.NewClient(server).Connect(ctx, addr)
			if err != nil {
				fmt.Fprintf(stderr, "perflab simdevice: adb server %s: %v\n", server, err)
				continue
			}
			connected = append(connected, link{server, addr})
			fmt.Fprintf(stdout, "adb server %s: %s\n", server, msg)
		}
	}
	var errs []error
	for range sims {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	// Disconnect, or the servers keep the phones as offline and retry them
	// every 10 s.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, l := range connected {
		if derr := adb.NewClient(l.server).Disconnect(dctx, l.addr); derr != nil {
			fmt.Fprintf(stderr, "perflab simdevice: adb server %s: %v\n", l.server, derr)
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "perflab simdevice: %v\n", err)
		return exitError
	}
	return exitOK
}
