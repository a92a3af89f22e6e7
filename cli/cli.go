// Package cli is perflab's command line: one file per command, each a
// function from arguments to an exit status. main only sets up signals and
// calls Main.
package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/perflab/perflab/lab"
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
		{"profile", "where the time went: a session's differential profile with statistics", cmdProfile},
		{"suite", "a Go module's benchmarks at two revisions, in paired rounds", cmdSuite},
		{"merge", "join the shards of a suite (suite --shard K/N) into one report", cmdMerge},
		{"devices", "list devices: sim presets, local, adb", cmdDevices},
		{"check", "MFLOPS stability check of a device's governor settings", cmdCheck},
		{"tune", "search governor profiles for the fastest stable one", cmdTune},
		{"simdevice", "serve a simulated phone over the adb wire protocol", cmdSimdevice},
		{"validate", "A/A and known-effect validation of an experiment setup", cmdValidate},
		{"order", "test whether trial order changes the conclusion (OrderSage)", cmdOrder},
		{"bisect", "find the build that caused a regression in a range (builds list or git)", cmdBisect},
		{"history", "the results history across experiments: import, export, change points, alerts, marks", cmdHistory},
		{"watch", "follow a branch: measure each commit, detect steps, confirm and bisect them", cmdWatch},
		{"serve", "a read-only web dashboard over a history and its sessions", cmdServe},
		{"example", "the example experiments and files shipped in perflab; a repository to watch", cmdExample},
	}
}

// Main runs perflab with args (without the program name) and returns the
// process exit status. ctx ends a run the way Ctrl-C does: the trial in
// flight is stopped and the session is closed.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return dispatch(ctx, args, stdout, stderr)
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
	if name == suiteCachegrindCmd { // a suite's trials run it; not listed
		return cmdSuiteCachegrind(ctx, args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "perflab: unknown command %q\n", name)
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if s := lab.Closest(name, append(names, "help", "version")); s != "" {
		fmt.Fprintf(stderr, "did you mean %q? (perflab %s)\n", s, strings.Join(append([]string{s}, args[1:]...), " "))
	}
	fmt.Fprintln(stderr)
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
	fmt.Fprint(w, `
Start with the simulated phone, no setup needed (perflab example lists
the examples; example:NAME runs one from any folder):
  perflab                                   # the workbench
  perflab check sim:pixel                   # is performance stable?
  perflab run example:sim-controls-on --headless
Where the time went, a Go module's benchmarks, a branch watched:
  perflab run example:sim-profile --headless --out p.jsonl && perflab profile p.jsonl
  perflab suite --base HEAD~1               # in a Go module: the last commit's benchmarks
  perflab example watch-repo /tmp/w && perflab watch example:sim-watch --git /tmp/w --since base --once

Manual: README.md, then docs/ (one page per subject; each command's help names its page)
`)
}

// Exit statuses of run and report.
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitRegression = 3
)

// Exit statuses of check and tune beyond 0 (stable / recommended), 1 (error)
// and 2 (usage).
const exitUnstable = 3
