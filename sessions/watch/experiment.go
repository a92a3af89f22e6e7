package watch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/perflab/perflab/lab"
)

// Spec is the "watch" object of an experiment file: how a commit becomes
// a build. Build runs (sh -c) in a git worktree of the commit with
// $PERFLAB_REV and $PERFLAB_OUT set; Run is the trial command on this host
// ({out} is $PERFLAB_OUT), or APK the app the build yields for a phone.
// On a simulated phone none is needed: the commit's perflab-sim.json is
// its build.
type Spec struct {
	Build string `json:"build,omitempty"`
	Run   string `json:"run,omitempty"`
	APK   string `json:"apk,omitempty"`
}

// Loaded is an experiment file read for perflab watch.
type Loaded struct {
	// Experiment is the template of every comparison (device, controls,
	// order, trials or stop rule, metrics, threshold, seed); its builds
	// are set per comparison.
	Experiment lab.Experiment
	// Reference is the file's "builds": {"control": ...} when it names one,
	// else nil: the --since commit's build is the reference.
	Reference *lab.Build
	Spec      Spec
}

// IsSim reports whether the device is the simulated phone.
func IsSim(device string) bool { return strings.HasPrefix(device, "sim:") }

// LoadExperiment reads an experiment file for perflab watch: an
// experiment file as perflab run reads it, whose "builds" may name only
// the reference ("control") or be left out, plus a "watch" object (Spec).
// Errors name the file and the field.
func LoadExperiment(path string) (*Loaded, error) {
	data, base, err := lab.ReadExperimentFile(path)
	if err != nil {
		return nil, err
	}
	obj := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &obj); err != nil {
		if _, perr := lab.ParseExperiment(data); perr != nil {
			err = perr // names the line
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := &Loaded{}
	if raw, ok := obj["watch"]; ok {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out.Spec); err != nil {
			return nil, fmt.Errorf("%s: watch: %w (fields: build, run, apk)", path, err)
		}
		delete(obj, "watch")
	}
	if raw, ok := obj["builds"]; ok {
		var builds map[string]lab.Build
		if err := json.Unmarshal(raw, &builds); err != nil {
			return nil, fmt.Errorf("%s: builds: %w; perflab watch takes at most {\"control\": BUILD}, the reference", path, err)
		}
		for k := range builds {
			if k != lab.ArmControl {
				return nil, fmt.Errorf("%s: builds.%s: perflab watch takes only \"control\" (the reference build); the commits are the other builds", path, k)
			}
		}
		if c, ok := builds[lab.ArmControl]; ok {
			out.Reference = &c
		}
	}
	obj["builds"] = json.RawMessage(`{"control": {"command": ["true"]}, "treatment": {"command": ["true"]}}`)
	doc, _ := json.Marshal(obj)
	exp, err := lab.ParseExperiment(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	exp.Builds = nil
	if out.Reference != nil {
		exp.Builds = map[string]lab.Build{lab.ArmControl: *out.Reference}
		exp.ResolvePaths(base)
		ref := exp.Builds[lab.ArmControl]
		out.Reference = &ref
		exp.Builds = nil
	}
	out.Experiment = *exp
	if err := out.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// Check refuses what a watch cannot run (called again after the device
// is overridden).
func (l *Loaded) Check() error {
	e := &l.Experiment
	devs := e.DeviceList()
	switch {
	case len(devs) != 1:
		return fmt.Errorf("devices: %d devices; perflab watch runs on one device (it holds that device's lock)", len(devs))
	case e.Order != lab.OrderAlternate && e.Order != lab.OrderRandom:
		return fmt.Errorf("order: %q; perflab watch needs \"alternate\" or \"random\" (paired rounds, as its confirmations and bisects)", e.Order)
	case l.Spec.Run != "" && l.Spec.APK != "":
		return fmt.Errorf("watch: give \"run\" (a trial command on this host) or \"apk\" (for a phone), not both")
	case IsSim(devs[0]):
		if l.Spec.Build != "" || l.Spec.Run != "" || l.Spec.APK != "" {
			return fmt.Errorf("watch: on a simulated phone (%s) each commit's %s is its build; leave out build, run and apk", devs[0], SimFile)
		}
	case l.Spec.Run == "" && l.Spec.APK == "":
		return fmt.Errorf("watch: on %s give \"run\" (a trial command, {out} being the build's $PERFLAB_OUT) or \"apk\" (e.g. \"{out}/app.apk\"), with \"build\" to make it", devs[0])
	}
	return nil
}
