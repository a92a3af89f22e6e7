package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/perflab/perflab/examples"
	"github.com/perflab/perflab/lab/shquote"
	"github.com/perflab/perflab/sessions/watch"
)

// watchRepoName is the example that is made, not shipped: a git
// repository perflab watch can follow on the simulated phone.
const watchRepoName = "watch-repo"

const exampleHelp = `Usage:
  perflab example                      list the examples shipped in perflab
  perflab example NAME [--out FILE]    print one (or write it to FILE)
  perflab example watch-repo DIR       make a git repository to try perflab watch on

Every example is inside the perflab binary: wherever a command reads an
experiment file, example:NAME names one, from any folder (the commands of
an example run in the current folder). perflab example NAME prints it, to
read or to copy as the start of your own.

watch-repo makes DIR a git repository of a base commit and --commits more,
each committing the perflab-sim.json that makes its simulated build
(perflab watch on sim: devices builds nothing), the base tagged "base";
the commit --step-at adds a
--step % startup regression to the feed app, which stays in the commits
after it. It then prints the watch to run on it.

Exit status: 0 done; 1 error (an unknown example, DIR not empty); 2 usage.

Examples:
  perflab example
  perflab run example:sim-controls-on --headless
  perflab example sim-profile --out my-experiment.json
  perflab example watch-repo /tmp/watched && perflab watch example:sim-watch --git /tmp/watched --since base --once

Manual: docs/history.md (a watchable repository), docs/experiment-file.md

Flags:
`

// cmdExample lists, prints or writes the shipped examples, and makes the
// watchable repository.
func cmdExample(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	out := fs.String("out", "", "write the example to `FILE` instead of printing it")
	commits := fs.Int("commits", 30, "watch-repo: commits after the base")
	stepAt := fs.Int("step-at", 16, "watch-repo: the commit (1-based) that adds the regression; 0 for none (an A/A history)")
	step := fs.Float64("step", 2, "watch-repo: the regression in %")
	pos, code, ok := parseCommandFlags(fs, args, exampleHelp, stdout, stderr)
	if !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "perflab example:", err)
		return exitError
	}
	switch {
	case len(pos) == 0:
		listExamples(stdout)
		return exitOK
	case pos[0] == watchRepoName:
		if len(pos) != 2 {
			fmt.Fprintln(stderr, "perflab example watch-repo: want one folder (perflab example watch-repo DIR)")
			return exitUsage
		}
		if *commits < 1 || *stepAt < 0 || *stepAt > *commits {
			fmt.Fprintf(stderr, "perflab example watch-repo: --commits %d, --step-at %d: want at least 1 commit and a step among them (0: none)\n", *commits, *stepAt)
			return exitUsage
		}
		if err := makeWatchRepo(ctx, pos[1], *commits, *stepAt, *step); err != nil {
			return fail(err)
		}
		what := fmt.Sprintf("commit %d adds a %g%% startup regression", *stepAt, *step)
		if *stepAt == 0 {
			what = "no commit changes anything (an A/A history)"
		}
		fmt.Fprintf(stdout, "%s: a git repository of a base commit and %d more; %s. Watch it on the simulated phone:\n  perflab watch example:sim-watch --git %s --since base --once\n",
			pos[1], *commits, what, shquote.Quote(pos[1]))
		return exitOK
	case len(pos) > 1:
		fmt.Fprintln(stderr, "perflab example: want one NAME (perflab example lists them)")
		return exitUsage
	}
	data, _, err := examples.Read(pos[0])
	if err != nil {
		return fail(err)
	}
	if *out == "" {
		stdout.Write(data)
		return exitOK
	}
	if _, err := os.Stat(*out); err == nil {
		return fail(fmt.Errorf("%s exists: perflab example writes only a new file", *out))
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return exitOK
}

// listExamples prints each example with what it is: an experiment's
// device and builds, or the kind of file.
func listExamples(w io.Writer) {
	fmt.Fprintln(w, "Examples shipped in perflab (perflab example NAME prints one; example:NAME runs one):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, name := range examples.Names() {
		fmt.Fprintf(tw, "  %s\t%s\n", name, exampleSummary(name))
	}
	fmt.Fprintf(tw, "  %s DIR\ta git repository to try perflab watch on (made, not shipped)\n", watchRepoName)
	tw.Flush()
}

// exampleSummaries say what each shipped example shows; a test checks
// that every example has one.
var exampleSummaries = map[string]string{
	"compare/README.md":        "how the compare samples were measured",
	"compare/bench-loaded.txt": "go test -bench output with a CPU hog beside it (perflab compare)",
	"compare/bench-quiet.txt":  "the same benchmarks on a quiet machine (perflab compare)",
	"compare/hyperfine-gzip":   "hyperfine JSON of gzip -1 vs gzip -6 (perflab compare)",
	"compare/startup-a.txt":    "python3 start-up times in ms, A (perflab compare)",
	"compare/startup-b.txt":    "python3 start-up times in ms, B, importing two modules",
	"git-bisect":               "local: the experiment of perflab bisect --git (builds come from the commits)",
	"history.csv":              "a history as CSV (perflab history import --csv)",
	"local-aa":                 "local: the same shell loop twice, an A/A experiment",
	"local-cachegrind":         "local: a 5% longer loop under cachegrind (instruction counts)",
	"local-regression":         "local: a loop doing 20% more work",
	"local-reported-metrics":   "local: programs reporting their own metrics (PERFLAB_METRIC lines)",
	"local-reset":              "local: a state folder that grows unless restored between trials",
	"sim-bisect":               "sim:pixel: six builds, one of them slower (perflab bisect)",
	"sim-controls-off":         "sim:pixel: A/A with every noise control off",
	"sim-controls-on":          "sim:pixel: A/A with every noise control on",
	"sim-order-carryover":      "sim:pixel: A/A without the app-state reset, where order matters (perflab order)",
	"sim-order-clean":          "sim:pixel: A/A with the reset, where order does not matter",
	"sim-profile":              "sim:pixel: decodeImage 3% slower, profiled (perflab profile)",
	"sim-three-builds":         "sim:pixel: three builds, +5% and -5% against the first",
	"sim-watch":                "sim:pixel: the experiment of perflab watch (builds come from each commit's perflab-sim.json)",
}

// exampleSummary says what an example is.
func exampleSummary(name string) string { return exampleSummaries[name] }

// makeWatchRepo makes dir (new or empty) a git repository of a base
// commit and n more, each with its perflab-sim.json; from commit stepAt
// on (1-based, 0 none) the feed app is step % slower.
func makeWatchRepo(ctx context.Context, dir string, n, stepAt int, step float64) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: watch-repo makes a new repository", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "user.name=perflab example", "-c", "user.email=example@perflab.invalid",
			"-c", "commit.gpgsign=false"}, args...)...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
		}
		return nil
	}
	if err := git("init", "-q", "-b", "main"); err != nil {
		return err
	}
	for i := 0; i <= n; i++ {
		eff, msg := 0.0, fmt.Sprintf("commit %d", i)
		if i == 0 {
			msg = "base"
		}
		if stepAt > 0 && i >= stepAt {
			eff = step
		}
		if i == stepAt && stepAt > 0 {
			msg += fmt.Sprintf(": the feed app %g%% slower to start", step)
		}
		sim := fmt.Sprintf("{\"app\": \"feed\", \"effect_pct\": %g}\n", eff)
		if err := os.WriteFile(filepath.Join(dir, watch.SimFile), []byte(sim), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "CHANGES"), fmt.Appendf(nil, "%d\n", i), 0o644); err != nil {
			return err
		}
		if err := git("add", "."); err != nil {
			return err
		}
		if err := git("commit", "-q", "-m", msg); err != nil {
			return err
		}
		if i == 0 {
			// The watch starts after it: --since base.
			if err := git("tag", "base"); err != nil {
				return err
			}
		}
	}
	return nil
}
