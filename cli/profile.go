package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/profdiff"
)

const profileUsage = `Usage: perflab profile SESSION.jsonl [--json] [--cum] [--phase PHASE] [--top N]
       perflab profile SESSION.jsonl --pprof DIR

Where did the time go: the differential profile of a session run with
"profile": true (or run --profile). For each function, its time per trial
in A and B (its share of the trial's samples times the trial's measured
time, the primary metric when it is a time), and a paired test over the
rounds: Wilcoxon's signed-rank test of the per-round log ratio with its
Hodges–Lehmann Δ and interval, the same verdict words as every other
comparison (regression, improvement, no change, inconclusive), corrected
across the functions by Benjamini–Hochberg weighted by each function's
share of the time (Genovese, Roeder & Wasserman 2006: the false discovery
rate stays at most alpha, and the error rate is spent where the time is).
The reported functions come first, then the rest, each by its
contribution to the total change; a line says how much of the total the
reported ones explain. A function needs a sample in every trial and at
least --min-samples per trial on average in both builds to be tested; the
rarer ones are grouped.

Self time (the function itself, default) or --cum (with its callees);
--phase keeps the samples of one phase of the app (the simulated apps have
startup, network and first_frame; an app names its own with PERFLAB_SPAN
lines). The declared family is self time, all phases: its verdicts keep
the false discovery rate at alpha. A phase or --cum is an exploratory
view, corrected within itself only, not across the views looked at, and
says so; its total is the phase's own change, and with --cum only the
outermost reported functions (no reported caller) are summed.

Frames of a stripped binary are named from its debug file (found by build
ID under /usr/lib/debug/.build-id, or by .gnu_debuglink) or, with
--symbols DIR, from an unstripped copy or debug file in a build tree;
what stays unknown is BINARY+0xADDR, and one row "BINARY (unsymbolized)"
per binary holds them in the table. The profiles keep each frame's
binary (path, build ID, mapping), the command's first, so pprof can
symbolize them too: go tool pprof -top BINARY DIR/B.pb.gz with the
unstripped binary, or the standalone pprof with PPROF_BINARY_PATH.

--pprof DIR writes the merged profiles for pprof's own tools: all.pb.gz
(every trial, every sample labelled arm, build, trial, round, device,
warmup and phase), A.pb.gz and B.pb.gz (control and treatment), and
all.folded (collapsed stacks for flame graphs, speedscope):
  go tool pprof -top -tagfocus arm=treatment DIR/all.pb.gz
  go tool pprof -top -tagfocus phase=first_frame DIR/all.pb.gz
  go tool pprof -top -diff_base DIR/A.pb.gz DIR/B.pb.gz

--json gives the table as one document: per function name, a_ms, b_ms,
delta_ms, delta_pct, ci_low_pct, ci_high_pct, p, p_adjusted, verdict,
samples_a, samples_b; and declared_family, family (the view's error rate
in words), weighting, total_delta_ms, total_of, explained_pct, explained.

Exit status: 0 done; 1 error (no profiles in the session, a session that does
not read); 2 usage (no session named, a bad flag).

Examples:
  perflab run example:sim-profile --headless --out /tmp/p.jsonl
  perflab profile /tmp/p.jsonl
  perflab profile /tmp/p.jsonl --phase first_frame --top 10
  perflab profile /tmp/p.jsonl --pprof /tmp/p-pprof
  perflab profile /tmp/gzip.jsonl --symbols ~/src/gzip/build

Manual: docs/profiles.md

Flags:
`

// cmdProfile prints a session's differential profile.
func cmdProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "the table as one JSON document")
	cum := fs.Bool("cum", false, "cumulative time (with callees) instead of self time")
	phase := fs.String("phase", "", "keep the samples of one `PHASE` of the app")
	top := fs.Int("top", 20, "show the `N` functions that changed most (0: all)")
	minSamples := fs.Float64("min-samples", profdiff.DefaultMinSamples, "mean samples per trial a function needs in each build to be tested")
	pprofDir := fs.String("pprof", "", "write the merged profiles (all, A, B) and collapsed stacks to `DIR`")
	symbols := fs.String("symbols", "", "name the frames the profiler could not from the unstripped binaries or debug files under `DIR` (a build tree)")
	wide := fs.Bool("wide", false, "every column, however wide (default on a terminal: fitted to its width)")
	pos, code, ok := parseCommandFlags(fs, args, profileUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "perflab profile: want exactly one session file (perflab profile --help)")
		return exitUsage
	}
	if *pprofDir != "" {
		if err := writeMerged(pos[0], *pprofDir, &elfsym.Resolver{Symbols: *symbols}, stdout); err != nil {
			fmt.Fprintln(stderr, "perflab profile:", err)
			return exitError
		}
		return exitOK
	}
	r, err := profdiff.Analyze(pos[0], profdiff.Options{Cumulative: *cum, Phase: *phase, MinSamples: *minSamples,
		Symbols: &elfsym.Resolver{Symbols: *symbols}})
	if err != nil {
		fmt.Fprintln(stderr, "perflab profile:", err)
		return exitError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(stderr, "perflab profile:", err)
			return exitError
		}
		return exitOK
	}
	printProfile(stdout, r, *top, fitWidth(stdout, *wide))
	return exitOK
}

// printProfile prints the differential profile as a table.
func printProfile(w io.Writer, r *profdiff.Report, top, width int) {
	what := r.Kind + " time"
	if r.Phase != "" {
		what += ", phase " + r.Phase
	}
	scale := "the samples' own time"
	if r.Metric != "" {
		scale = "each trial's " + r.Metric
	}
	say := func(f string, args ...any) { // a line of prose, wrapped to the terminal
		line := fmt.Sprintf(f, args...)
		if width > 0 {
			line = format.Wrap(line, width)
		}
		fmt.Fprintln(w, line)
	}
	say("where the time went: %s per trial (share of samples × %s), %d paired rounds", what, scale, r.Pairs)
	say("paired signed-rank test per function, Benjamini–Hochberg weighted by %s across %d tested %s, alpha %g (each interval at its function's false-coverage level, which matches its test); %d too rare to test",
		weightingText(r.Weighting), r.Tested, format.Plural(r.Tested, "function", "functions"), r.Alpha, r.Rare)
	if r.Declared {
		say("%s: false discovery rate at most %g", r.Family, r.Alpha)
	} else {
		say("%s", r.Family)
	}
	fmt.Fprintln(w)
	rows := [][]string{{"function", "A ms", "B ms", "Δ ms", "Δ", "CI", "p", "p adj", "verdict"}}
	shown := 0
	for _, f := range r.Functions {
		if top > 0 && shown >= top && f.Tested {
			continue
		}
		shown++
		ci := format.Text.SignedPct(f.CILowPct) // "n/a"
		if f.CILowPct.Defined() {
			ci = fmt.Sprintf("[%s, %s]", format.SignedPct(f.CILowPct), format.SignedPct(f.CIHighPct))
		}
		verdict := f.Verdict
		if !f.Tested {
			verdict = "not tested"
		}
		rows = append(rows, []string{f.Name, fmt.Sprintf("%.2f", f.AMs), fmt.Sprintf("%.2f", f.BMs), fmt.Sprintf("%+.2f", f.DeltaMs),
			format.SignedPct(f.DeltaPct), ci, format.P(f.P, r.Alpha), format.P(f.PAdjusted, r.Alpha), verdict})
	}
	right := []bool{false, true, true, true, true, false, true, true, false}
	var sb strings.Builder
	analysis.WriteAligned(&sb, rows, right)
	if width > 0 && analysis.WidestLine(sb.String()) > width {
		// Fit the terminal: the Δ, interval, corrected p and verdict stay
		// (A ms, B ms and the raw p go; --wide keeps them), and names keep
		// their end, the function's own name.
		sb.Reset()
		analysis.WriteAligned(&sb, analysis.FitColumns(rows, []int{0, 3, 4, 5, 7, 8}, width, true), []bool{false, true, true, false, true, false})
	}
	io.WriteString(w, sb.String())
	if hidden := len(r.Functions) - shown; hidden > 0 {
		fmt.Fprintf(w, "(%d more functions: --top 0 shows them all)\n", hidden)
	}
	total := fmt.Sprintf("total: Δ %+.2f ms per round of %s", r.TotalDeltaMs, r.TotalOf)
	summed := "the reported functions add up"
	if r.Kind == "cumulative" {
		summed = fmt.Sprintf("the %d outermost reported %s (no reported caller; nested time is not counted twice) %s",
			len(r.Explained), format.Plural(len(r.Explained), "function", "functions"), format.Plural(len(r.Explained), "comes", "come"))
	}
	if r.ExplainedPct.Defined() {
		total += fmt.Sprintf("; %s to %.0f%% of it (the total has its own noise)", summed, float64(r.ExplainedPct))
	}
	fmt.Fprintln(w)
	say("%s", total)
	if len(r.Phases) > 0 && r.Phase == "" {
		fmt.Fprintf(w, "phases: %s (--phase PHASE)\n", strings.Join(r.Phases, ", "))
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

// weightingText says how the functions' tests were weighted.
func weightingText(weighting string) string {
	switch weighting {
	case profdiff.WeightShare:
		return "each function's share of the time"
	case profdiff.WeightSqrtShare:
		return "the square root of each function's share of the time"
	}
	return "nothing (flat)"
}

// writeMerged writes a session's trial profiles merged for pprof: all,
// each arm, and the collapsed stacks of all; res names what the profiler
// did not.
func writeMerged(path, dir string, res *elfsym.Resolver, stdout io.Writer) error {
	s, err := sessions.Load(path)
	if err != nil {
		return err
	}
	var all, a, b []*profile.Profile
	for _, e := range s.Events {
		t := e.Trial
		if e.Type != lab.EventTrial || t == nil || t.Profile == nil || t.Profile.File == "" {
			continue
		}
		p, err := sessions.LoadTrialProfile(path, t.Profile)
		if err != nil {
			fmt.Fprintf(stdout, "trial %d: %v: left out\n", t.Index, err)
			continue
		}
		sessions.Symbolize(p, res)
		all = append(all, p)
		switch t.Arm {
		case lab.ArmControl:
			a = append(a, p)
		case lab.ArmTreatment:
			b = append(b, p)
		}
	}
	if len(all) == 0 {
		return fmt.Errorf("%s: no trial has a profile", path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, out := range []struct {
		name  string
		profs []*profile.Profile
	}{{"all.pb.gz", all}, {"A.pb.gz", a}, {"B.pb.gz", b}} {
		if len(out.profs) == 0 {
			continue
		}
		m, err := profile.Merge(out.profs)
		if err != nil {
			return fmt.Errorf("merging the profiles: %w", err)
		}
		f, err := os.Create(filepath.Join(dir, out.name))
		if err != nil {
			return err
		}
		err = m.Write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (%d trials)\n", filepath.Join(dir, out.name), len(out.profs))
	}
	m, _ := profile.Merge(all)
	f, err := os.Create(filepath.Join(dir, "all.folded"))
	if err != nil {
		return err
	}
	err = sessions.WriteFolded(f, m)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		fmt.Fprintf(stdout, "wrote %s (collapsed stacks)\n", filepath.Join(dir, "all.folded"))
	}
	return err
}
