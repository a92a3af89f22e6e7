package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/check"
	"github.com/perflab/perflab/lab/governor"
)

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

Manual: docs/devices.md
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
	if err := errors.Join(lab.CheckRange("--steps", *steps, 1, lab.MaxTuneSteps), lab.CheckDuration("--cooldown", *cooldown)); err != nil {
		fmt.Fprintln(stderr, "perflab tune:", err)
		return 2
	}
	dev, window, code := pf.open(ctx, pos[0], stderr)
	if code >= 0 {
		return code
	}
	defer pf.close(dev)
	info := dev.Info()
	interval, realtime := pf.interval, pf.realtime
	cool := *cooldown
	if cool == 0 {
		cool = check.DefaultCooldown(dev)
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
	for _, n := range res.Notes {
		fmt.Fprintln(stderr, "perflab tune:", n)
	}
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
