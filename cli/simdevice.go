package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"strings"
	"time"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/sim"
	"github.com/perflab/perflab/lab/simdevice"
)

const simdeviceUsage = `Usage: perflab simdevice [--listen 127.0.0.1:PORT] [--preset P] [flags]

Serves a simulated phone as an adb device over TCP: Debian's (or Google's)
adb server connects to it with "adb connect", and from then on it is a phone
like any other: adb shell (with exit codes), push, pull, reverse, and
perflab's adb backend (adb:SERIAL) run on it unchanged. Its shell answers
like Android's toybox/mksh: getprop, setprop, stop/start, cat/echo on the
cpufreq sysfs files, su -c, am start -W, pm install/path/clear, input
keyevent, dumpsys window, mount -t tmpfs, the pushed perflab probe, ...

The sim builds are installed as packages org.perflab.sim.APP (plus
.pEFFECT / .mEFFECT for builds with a known effect), so sim experiments run
unchanged against it with --device adb:SERIAL.

Stop it with Ctrl-C; the adb server then shows the device offline.

The device has no authentication (it accepts every adb key), so --listen
takes only a loopback address unless --allow-remote is given, and then warns.
The simulated phone itself reaches only its loopback: ports the host
reversed with adb reverse (perflab-http-get and the apps' fetches through
the http_proxy setting); any other address is refused.

Examples:
  perflab simdevice --listen 127.0.0.1:6520 --preset pixel
  adb connect 127.0.0.1:6520 && adb -s 127.0.0.1:6520 shell getprop ro.product.model
  perflab simdevice --listen 127.0.0.1:6520 --connect 127.0.0.1:5037
  perflab run examples/sim-controls-on.json --device adb:127.0.0.1:6520 --headless

Flags:
`

// cmdSimdevice serves a simulated phone over the adb wire protocol.
func cmdSimdevice(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simdevice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:6520", "address to serve the device on (avoid 5554-5585: adb scans them for emulators); loopback only unless --allow-remote")
	allowRemote := fs.Bool("allow-remote", false, "let --listen bind a non-loopback address: anyone who reaches it gets an unauthenticated adb device")
	preset := fs.String("preset", "pixel", "sim preset: "+strings.Join(sim.PresetNames(), ", "))
	serial := fs.String("serial", "", "value of ro.serialno (adb itself names TCP devices HOST:PORT)")
	seed := fs.Int64("seed", 1, "seed of the simulated phone's noise")
	root := fs.Bool("root", false, "adbd runs as root (otherwise root needs su -c, as on a rooted phone)")
	realtime := fs.Bool("realtime", false, "launches and probe runs take wall-clock time")
	unauthorized := fs.Bool("unauthorized", false, "never accept the host's key, so adb lists the device as unauthorized (for trying perflab's handling)")
	var connect repeatedFlag
	fs.Var(&connect, "connect", "ask the adb server at HOST:PORT to connect to this device (repeatable)")
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
	opt := simdevice.Options{Preset: *preset, Seed: *seed, Root: *root, Realtime: *realtime, Unauthorized: *unauthorized}
	if *verbose {
		opt.Logf = log.New(stderr, "", log.Ltime|log.Lmicroseconds).Printf
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
	s, err := simdevice.New(opt)
	if err != nil {
		fmt.Fprintf(stderr, "perflab simdevice: %v\n", err)
		return exitUsage
	}
	if *serial != "" {
		s.Shell.SetPropOverride("ro.serialno", *serial)
	}
	addr, err := s.Server.Listen(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "perflab simdevice: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "perflab simdevice: %s (%s, %s) listening on %s\n", *preset, s.Phone.Prop("ro.product.model"),
		s.Phone.Preset().ABI, addr)
	fmt.Fprintf(stdout, "connect with: adb connect %s   (then use device adb:%s)\n", addr, addr)
	errc := make(chan error, 1)
	go func() { errc <- s.Server.Serve(ctx) }()
	var connected []string
	for _, server := range connect {
		msg, err := adb.NewClient(server).Connect(ctx, addr.String())
		if err != nil {
			fmt.Fprintf(stderr, "perflab simdevice: adb server %s: %v\n", server, err)
			continue
		}
		connected = append(connected, server)
		fmt.Fprintf(stdout, "adb server %s: %s\n", server, msg)
	}
	err = <-errc
	// Disconnect, or the servers keep the phone as offline and retry it
	// every 10 s.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, server := range connected {
		if derr := adb.NewClient(server).Disconnect(dctx, addr.String()); derr != nil {
			fmt.Fprintf(stderr, "perflab simdevice: adb server %s: %v\n", server, derr)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "perflab simdevice: %v\n", err)
		return exitError
	}
	return exitOK
}
