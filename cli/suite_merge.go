package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

const mergeUsage = `Usage: perflab merge [--json] SESSION...

Joins the sessions of a suite run in shards (perflab suite --shard K/N,
each shard on a machine of its own, e.g. one CI job of a matrix each) into
one report: every shard's benchmarks analysed together, each on the rounds
of the machine it ran on (a benchmark is in one shard only: its pairs are
blocked on that machine), the families corrected across all the shards'
benchmarks as one run's are, so the verdicts are those of one run over the
same rounds. A shard that failed (its run ended early, its session cannot
be read) or is missing is named, and the exit status is then 1 after the
report; else 0, or 3 when a benchmark regressed.

Examples:
  perflab suite --shard 1/4 --out shard1.jsonl ./...   # in job 1 of 4, and so on
  perflab merge shard1.jsonl shard2.jsonl shard3.jsonl shard4.jsonl

Manual: docs/suite.md

Flags:
`

// mergedReport is perflab merge --json: the report and the shards.
type mergedReport struct {
	analysis.Report
	Families []analysis.FamilySize `json:"families,omitempty"`
	Shards   []mergedShard         `json:"shards"`
	Failed   []string              `json:"failed,omitempty"`
}

// mergedShard is one session merge read.
type mergedShard struct {
	Shard  string `json:"shard"`
	Path   string `json:"path"`
	Device string `json:"device"`
	Trials int    `json:"trials"`
	Ended  string `json:"ended"`
}

// cmdMerge is perflab merge SESSION...: the shards of a suite as one report.
func cmdMerge(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON (report --json's metrics, with the shards)")
	pos, code, ok := parseCommandFlags(fs, args, mergeUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "perflab merge: give the shards' session files (perflab merge --help)")
		return exitUsage
	}
	var (
		plan   *lab.Experiment
		inputs []analysis.MetricInput
		out    mergedReport
		seen   = map[int]string{}
		shards int
	)
	for _, path := range pos {
		s, err := sessions.Load(path)
		if err != nil {
			out.Failed = append(out.Failed, fmt.Sprintf("%s: cannot be read: %v", path, err))
			continue
		}
		p := &s.Header.Plan
		if p.Suite == nil {
			fmt.Fprintf(stderr, "perflab merge: %s is not a perflab suite session\n", path)
			return exitUsage
		}
		shard := p.Suite.Shard
		if shard == "" {
			shard = "1/1"
		}
		kn, _ := parseShard(shard)
		switch {
		case plan == nil:
			plan, shards = p, kn[1]
		case kn[1] != shards || p.Suite.BaseRev != plan.Suite.BaseRev || p.Suite.HeadRev != plan.Suite.HeadRev ||
			p.Suite.Metrics != plan.Suite.Metrics || p.Seed != plan.Seed || p.Stop != plan.Stop:
			fmt.Fprintf(stderr, "perflab merge: %s is shard %s of another run (revisions, shards, seed, stop rule or --metrics differ from %s's)\n", path, shard, pos[0])
			return exitUsage
		}
		if prev, dup := seen[kn[0]]; dup {
			fmt.Fprintf(stderr, "perflab merge: shard %s given twice (%s and %s)\n", shard, prev, path)
			return exitUsage
		}
		seen[kn[0]] = path
		sum := s.Summary()
		ended := "completed"
		switch {
		case sum.End == nil:
			ended = "did not finish (no end event)"
		case sum.End.Reason != "completed":
			ended = strings.TrimSpace(sum.End.Reason + " " + sum.End.Error)
		}
		if ended != "completed" {
			out.Failed = append(out.Failed, fmt.Sprintf("shard %s (%s) failed: its run %s; its benchmarks rest on the rounds it ran", shard, path, ended))
		}
		opt := engine.Options(p)
		events, _, err := regimeEvents(s.Events, "", opt, true)
		if err != nil {
			out.Failed = append(out.Failed, fmt.Sprintf("shard %s (%s): %v", shard, path, err))
			continue
		}
		inputs = append(inputs, sessions.ArmInputs(events, len(p.ArmKeys()))...)
		out.Shards = append(out.Shards, mergedShard{Shard: shard, Path: path, Device: sum.Device.ID, Trials: sum.Counts.Total, Ended: ended})
	}
	if plan == nil {
		fmt.Fprintln(stderr, "perflab merge: no session could be read:\n  "+strings.Join(out.Failed, "\n  "))
		return exitError
	}
	for k := 1; k <= shards; k++ {
		if _, ok := seen[k]; !ok {
			out.Failed = append(out.Failed, fmt.Sprintf("shard %d/%d missing: its benchmarks are not in this report", k, shards))
		}
	}
	rep := engine.Analyse(plan, inputs, engine.Options(plan))
	rep.Warn(out.Failed...)
	out.Report, out.Families = rep.Report, rep.Families
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintln(stderr, "perflab merge:", err)
			return exitError
		}
	} else {
		var names []string
		for _, sh := range out.Shards {
			names = append(names, fmt.Sprintf("%s on %s (%d trials)", sh.Shard, sh.Device, sh.Trials))
		}
		fmt.Fprintf(stdout, "merged %d of %d shards: %s\n", len(out.Shards), shards, strings.Join(names, ", "))
		for _, f := range out.Failed {
			fmt.Fprintln(stdout, "FAILED:", f)
		}
		fmt.Fprintln(stdout)
		if rep.HasComparison() {
			fmt.Fprint(stdout, rep.Table())
		}
	}
	if len(out.Failed) > 0 {
		fmt.Fprintf(stderr, "perflab merge: %d shard(s) failed or missing, exit 1\n", len(out.Failed))
		return exitError
	}
	return regressionFound(stderr, "perflab merge", verdictCode(rep))
}
