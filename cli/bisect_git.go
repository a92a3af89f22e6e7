package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/bisect"
)

// gitFlags are perflab bisect's git-range flags.
type gitFlags struct {
	dir, good, bad, build, run, apk, cache, experiment string
}

func (g *gitFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.dir, "git", "", "bisect the commits of the git repository `DIR` (with --good, --bad, --run)")
	fs.StringVar(&g.good, "good", "", "good (older) `REV` of the git range")
	fs.StringVar(&g.bad, "bad", "", "bad (newer) `REV` of the git range")
	fs.StringVar(&g.build, "build", "", "shell `CMD` building a commit in its worktree ($PERFLAB_REV, $PERFLAB_OUT set)")
	fs.StringVar(&g.run, "run", "", "shell `CMD` of a trial; {out} is the commit's $PERFLAB_OUT")
	fs.StringVar(&g.apk, "apk", "", "for phones, instead of --run: the `APK` a build yields, e.g. '{out}/app.apk' (package and activity from its manifest)")
	fs.StringVar(&g.cache, "cache", "", "`DIR` for the commits' worktrees and builds (default ~/.cache/perflab/bisect/REPO)")
	fs.StringVar(&g.experiment, "experiment", "", "with --git: experiment `FILE` for device, controls, order, metrics (its builds, if any, are ignored)")
}

func (g *gitFlags) set() bool {
	return g.dir != "" || g.good != "" || g.bad != "" || g.build != "" || g.run != "" || g.apk != "" || g.cache != "" || g.experiment != ""
}

// check returns what is wrong with the git flags, or "".
func (g *gitFlags) check() string {
	switch {
	case g.dir == "":
		return "--good, --bad, --build, --run, --apk, --cache and --experiment go with --git DIR"
	case g.good == "" || g.bad == "":
		return "--git needs --good REV and --bad REV"
	case g.run == "" && g.apk == "":
		return "--git needs --run 'CMD {out}', the trial command (or --apk '{out}/app.apk' for phones)"
	case g.run != "" && g.apk != "":
		return "--run is the trial command on this host, --apk the app for a phone: give one"
	}
	return ""
}

// load lists the range and returns the experiment template and the builder.
func (g *gitFlags) load(ctx context.Context) (*lab.Experiment, []bisect.Candidate, func(context.Context, bisect.Candidate) (lab.Build, error), error) {
	exp, err := gitTemplate(g.experiment)
	if err != nil {
		return nil, nil, nil, err
	}
	exp.Builds = nil
	r := &bisect.GitRange{Dir: g.dir, Good: g.good, Bad: g.bad, Build: g.build, Run: g.run, APK: g.apk, Cache: g.cache}
	cands, err := r.Candidates(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return exp, cands, r.Resolve, nil
}

// gitTemplate reads the experiment file of a git bisect, whose builds (a
// control and treatment, a list, or none) are ignored; "" gives the
// defaults on local.
func gitTemplate(path string) (*lab.Experiment, error) {
	obj := map[string]json.RawMessage{}
	if path != "" {
		data, _, err := lab.ReadExperimentFile(path)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			if _, perr := lab.ParseExperiment(data); perr != nil {
				err = perr
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	obj["builds"] = json.RawMessage(`{"control": {"command": ["true"]}, "treatment": {"command": ["true"]}}`)
	doc, _ := json.Marshal(obj)
	exp, err := lab.ParseExperiment(doc)
	if err != nil && path != "" {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return exp, err
}
