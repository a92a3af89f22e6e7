// Command perflab is an interactive workbench for telling, with statistics
// you can trust, whether build B is slower than build A on a phone, this
// Linux host, or a built-in simulated phone.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// version is the tool version recorded in session headers.
const version = "0.1.0"

// command is one subcommand: run gets the arguments after its name and
// returns the process exit status.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"compare", "compare samples from files (numbers, go test -bench, hyperfine JSON)", cmdCompare},
		{"run", "run an experiment file (TUI, or --headless)", cmdRun},
		{"report", "re-analyse a saved session (table, --json, --csv, --benchstat)", cmdReport},
		{"replay", "replay a saved session (TUI, or --headless)", cmdReplay},
		{"devices", "list devices: sim presets, local, adb", cmdDevices},
		{"check", "MFLOPS stability check of a device's governor settings", cmdCheck},
		{"tune", "search governor profiles for the fastest stable one", cmdTune},
		{"simdevice", "serve a simulated phone over the adb wire protocol", cmdSimdevice},
		{"validate", "A/A and known-effect validation of an experiment setup", cmdValidate},
		{"order", "test whether trial order changes the conclusion (OrderSage)", cmdOrder},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// dispatch runs the subcommand named by args[0]; with no arguments it opens
// the workbench TUI.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return cmdTUI(ctx, nil, stdout, stderr)
	}
	name := args[0]
	// Flags without a command are the workbench's (perflab --device local).
	if strings.HasPrefix(name, "-") && name != "-h" && name != "--help" && name != "--version" {
		return cmdTUI(ctx, args, stdout, stderr)
	}
	switch name {
	case "help", "-h", "--help":
		if len(args) > 1 {
			return dispatch(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, "perflab", version)
		return 0
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "perflab: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `perflab: is build B slower than build A? Trials, noise controls and statistics.

Usage:
  perflab                 open the workbench (pick a device and builds, watch live)
  perflab COMMAND [ARGS]  run one command
  perflab help COMMAND    explain a command (same as perflab COMMAND --help)

Commands:
`)
	cs := commands()
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, strings.TrimLeft(`
Start with the simulated phone, no setup needed:
  perflab                                   # the workbench
  perflab check sim:pixel                   # is performance stable?
  perflab run examples/sim-controls-on.json --headless
`, "\n"))
}
