package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/examples"
)

// Order modes of a run.
const (
	OrderFixed     = "fixed"     // all control trials, then all treatment trials
	OrderAlternate = "alternate" // control, treatment, control, treatment, ...
	OrderRandom    = "random"    // each round of one control and one treatment shuffled
)

// Defaults applied by ParseExperiment to fields the file leaves out.
const (
	DefaultDevice     = "local"
	DefaultTrials     = 20
	DefaultWarmup     = 1
	DefaultOrder      = OrderRandom
	DefaultAlpha      = 0.05
	DefaultConfidence = 0.95
)

// ValidOrder reports whether mode is one of the order modes.
func ValidOrder(mode string) bool {
	return mode == OrderFixed || mode == OrderAlternate || mode == OrderRandom
}

// LoadExperiment reads and validates the experiment file at path. Relative
// build directories and state_dir are resolved against the file's directory,
// and a build without "dir" runs in that directory.
func LoadExperiment(path string) (*Experiment, error) {
	data, base, err := ReadExperimentFile(path)
	if err != nil {
		return nil, err
	}
	exp, err := ParseExperiment(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	exp.ResolvePaths(base)
	return exp, nil
}

// ReadExperimentFile reads an experiment file, or a shipped example named
// "example:NAME" (perflab example lists them), and returns the folder its
// relative paths are resolved against: the file's, or for an example the
// current folder (an example's commands run where perflab was started).
func ReadExperimentFile(path string) (data []byte, base string, err error) {
	if examples.Is(path) {
		data, _, err = examples.Read(path)
		if err != nil {
			return nil, "", err
		}
		base, err = os.Getwd()
		return data, base, err
	}
	if data, err = os.ReadFile(path); err != nil {
		return nil, "", err
	}
	base, err = filepath.Abs(filepath.Dir(path))
	return data, base, err
}

// ResolvePaths makes build directories, files and state_dir absolute, relative to
// base; a build without a directory gets base.
func (e *Experiment) ResolvePaths(base string) {
	for k, b := range e.Builds {
		switch {
		case b.Dir == "":
			if len(b.Command) > 0 {
				b.Dir = base
			}
		case !filepath.IsAbs(b.Dir):
			b.Dir = filepath.Join(base, b.Dir)
		}
		if b.Files != "" && !filepath.IsAbs(b.Files) {
			b.Files = filepath.Join(base, b.Files)
		}
		e.Builds[k] = b
	}
	if e.Controls.StateDir != "" && !filepath.IsAbs(e.Controls.StateDir) {
		e.Controls.StateDir = filepath.Join(base, e.Controls.StateDir)
	}
}

// ParseExperiment decodes an experiment file strictly: unknown fields and
// values of the wrong type are errors naming the field (and the line for
// syntax errors). Missing fields get defaults; a missing seed gets a fresh
// random one so the run stays reproducible from its session.
func ParseExperiment(data []byte) (*Experiment, error) {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonSyntaxError(data, err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the experiment object")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the experiment must be a JSON object, not %s", jsonKind(raw))
	}
	// A list of builds, base first, is the same as the keyed form.
	var list []Build
	if arr, ok := obj["builds"].([]any); ok {
		if err := checkShape("builds", arr, reflect.TypeOf([]Build{})); err != nil {
			return nil, err
		}
		if len(arr) < 2 {
			return nil, fmt.Errorf("builds: %d build(s) listed, want at least 2 (the base first)", len(arr))
		}
		if len(arr) > MaxArms {
			return nil, fmt.Errorf("builds: %d builds listed, want at most %d", len(arr), MaxArms)
		}
		var wrap struct {
			Builds []Build `json:"builds"`
		}
		if err := json.Unmarshal(data, &wrap); err != nil {
			return nil, err
		}
		list = wrap.Builds
		delete(obj, "builds")
		data, _ = json.Marshal(obj) // numbers stay json.Number: exact
	}
	// "profile": {"every": K} is "profile": true with profile_every K.
	if pm, ok := obj["profile"].(map[string]any); ok {
		every, err := profileEvery(pm)
		if err != nil {
			return nil, err
		}
		obj["profile"], obj["profile_every"] = true, json.Number(strconv.Itoa(every))
		data, _ = json.Marshal(obj)
	}
	if err := checkShape("", obj, reflect.TypeOf(Experiment{})); err != nil {
		return nil, err
	}
	var exp Experiment
	if err := json.Unmarshal(data, &exp); err != nil {
		return nil, err
	}
	if list != nil {
		exp.SetBuilds(list)
	}
	_, hasDevice := obj["device"]
	if _, ok := obj["devices"]; ok && hasDevice {
		return nil, errors.New(`devices: give "device" or "devices", not both`)
	} else if !ok && !hasDevice {
		exp.Device = DefaultDevice
	}
	if _, ok := obj["trials"]; !ok {
		exp.Trials = DefaultTrials
	}
	if _, ok := obj["warmup"]; !ok {
		exp.Warmup = DefaultWarmup
	}
	if exp.Order == "" {
		exp.Order = DefaultOrder
	}
	if _, ok := obj["seed"]; !ok {
		exp.Seed = rand.Int64N(1<<31-1) + 1
	}
	if _, ok := obj["alpha"]; !ok {
		exp.Alpha = DefaultAlpha
	}
	if _, ok := obj["confidence"]; !ok {
		exp.Confidence = DefaultConfidence
	}
	if err := exp.Validate(); err != nil {
		return nil, err
	}
	return &exp, nil
}

// profileEvery reads "profile": {"every": K}.
func profileEvery(pm map[string]any) (int, error) {
	for k := range pm {
		if k != "every" {
			return 0, fmt.Errorf("profile: unknown field %q (want true, false or {\"every\": K})", k)
		}
	}
	n, ok := pm["every"].(json.Number)
	if !ok {
		return 0, errors.New(`profile: want {"every": K}, K a whole number of rounds`)
	}
	k, err := strconv.Atoi(n.String())
	if err != nil || k < 1 {
		return 0, fmt.Errorf("profile.every: %s: want a whole number ≥ 1 (1: every round)", n)
	}
	return k, nil
}

// Validate checks the fields every backend relies on. Backend-specific
// checks (a local build needs a command) happen in the device's Setup.
func (e *Experiment) Validate() error {
	for _, check := range []func() error{e.validateDevices, e.validateBuilds, e.validateRounds,
		e.validateStatistics, e.validateStop, e.validateMetrics} {
		if err := check(); err != nil {
			return err
		}
	}
	return e.Controls.Validate()
}

// validateDevices checks "device", or "devices": a pool of distinct ones.
func (e *Experiment) validateDevices() error {
	if len(e.Devices) > 0 {
		if e.Device != "" {
			return errors.New(`devices: give "device" or "devices", not both`)
		}
		seen := map[string]bool{}
		for i, d := range e.Devices {
			if strings.TrimSpace(d) == "" {
				return fmt.Errorf(`devices[%d]: empty (want "local", "sim:<preset>", "adb:<serial>" or "adb:model=<model>")`, i)
			}
			if seen[d] {
				return fmt.Errorf("devices[%d]: %q is listed twice", i, d)
			}
			seen[d] = true
		}
	} else if strings.TrimSpace(e.Device) == "" {
		return errors.New(`device: empty (want "local", "sim:<preset>" or "adb:<serial>")`)
	}
	return nil
}

// validateBuilds checks the builds, their arms and the effects injected
// into them.
func (e *Experiment) validateBuilds() error {
	if len(e.Builds) == 0 {
		return errors.New(`builds: missing (want "control" and "treatment", or a list of builds, the base first)`)
	}
	if err := e.validateArms(); err != nil {
		return err
	}
	for _, k := range e.ArmKeys() {
		if f := e.Builds[k].Effect; f != nil {
			if strings.TrimSpace(f.Function) == "" {
				return fmt.Errorf("builds.%s.effect.function: name the function to slow, e.g. \"feed.decodeImage\"", k)
			}
			if f.Pct <= MinEffectPct {
				return fmt.Errorf("builds.%s.effect.pct: %v is %w (want more than %v)", k, f.Pct, ErrTooSmall, MinEffectPct)
			}
			if err := CheckRange("builds."+k+".effect.pct", f.Pct, MinEffectPct, MaxEffectPct); err != nil {
				return err
			}
		}
		if b := e.Builds[k]; b.EffectPct != 0 {
			if b.EffectPct <= MinEffectPct {
				return fmt.Errorf("builds.%s.effect_pct: %v is %w (want more than %v)", k, b.EffectPct, ErrTooSmall, MinEffectPct)
			}
			if err := CheckRange("builds."+k+".effect_pct", b.EffectPct, MinEffectPct, MaxEffectPct); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateRounds checks the trials, the warm-ups, the threshold and the
// order.
func (e *Experiment) validateRounds() error {
	if e.Trials < 1 {
		return fmt.Errorf("trials: %d, want at least 1 (counted trials per arm)", e.Trials)
	}
	if err := CheckRange("trials", e.Trials, 1, MaxTrials); err != nil {
		return err
	}
	if e.Warmup < 0 {
		return fmt.Errorf("warmup: %d, want 0 or more", e.Warmup)
	}
	if !(e.Threshold >= 0 && e.Threshold < 1e6) {
		return fmt.Errorf("threshold: %v, want a percentage of at least 0", e.Threshold)
	}
	if err := CheckRange("warmup", e.Warmup, 0, MaxWarmup); err != nil {
		return err
	}
	if !ValidOrder(e.Order) {
		return fmt.Errorf("order: %q, want fixed, alternate or random", e.Order)
	}
	if len(e.Devices) > 1 && e.Order == OrderFixed {
		return errors.New(`order: "fixed" cannot run on a pool of devices: each device runs whole rounds of one A and one B (want "alternate" or "random")`)
	}
	return nil
}

// validateStatistics checks alpha, the confidence and the trial timeout.
func (e *Experiment) validateStatistics() error {
	if !(e.Alpha > 0 && e.Alpha < 1) {
		return fmt.Errorf("alpha: %v, want a number between 0 and 1 (e.g. 0.05)", e.Alpha)
	}
	if !(e.Confidence > 0 && e.Confidence < 1) {
		return fmt.Errorf("confidence: %v, want a number between 0 and 1 (e.g. 0.95)", e.Confidence)
	}
	if e.TrialTimeout < 0 || math.IsNaN(e.TrialTimeout) {
		return fmt.Errorf("trial_timeout: %v, want seconds ≥ 0 (0 means none)", e.TrialTimeout)
	}
	if err := CheckRange("trial_timeout", e.TrialTimeout, 0, MaxTrialTimeoutS); err != nil {
		return fmt.Errorf("%w seconds (0 means none)", err)
	}
	if err := CheckRange("sequential_trim", e.SequentialTrim, 0, analysis.MaxTrim); err != nil {
		return fmt.Errorf("%w: the share of the log ratios cut from each end (0: their mean; 0.2: their 20%% trimmed mean)", err)
	}
	return nil
}

// validateStop checks the stopping rule and its cap.
func (e *Experiment) validateStop() error {
	if e.ProfileEvery < 0 {
		return fmt.Errorf("profile_every: %d: want 0 (every round) or more", e.ProfileEvery)
	}
	switch e.Stop {
	case "", StopFixed:
	case StopAuto:
		if e.MultiArm() {
			return fmt.Errorf(`stop: "auto" compares two builds, this experiment has %d: use "fixed"`, len(e.ArmKeys()))
		}
		if e.Order == OrderFixed {
			return errors.New(`stop: "auto" needs order "alternate" or "random": it analyses rounds as pairs`)
		}
	default:
		return fmt.Errorf(`stop: %q, want "fixed" or "auto"`, e.Stop)
	}
	if e.MaxTrials != 0 {
		if e.Stop != StopAuto {
			return errors.New(`max_trials: applies to "stop": "auto" only`)
		}
		if e.MaxTrials < 2 {
			return fmt.Errorf("max_trials: %d, want at least 2 per arm", e.MaxTrials)
		}
		if err := CheckRange("max_trials", e.MaxTrials, 2, MaxTrials); err != nil {
			return err
		}
	}
	return nil
}

// validateMetrics checks the metric names, the profiler and the primary
// metric.
func (e *Experiment) validateMetrics() error {
	seen := map[string]bool{}
	for i, m := range e.Metrics {
		if strings.TrimSpace(m) == "" || strings.ContainsAny(m, " \t=") {
			return fmt.Errorf("metrics[%d]: %q is not a metric name", i, m)
		}
		if seen[m] {
			return fmt.Errorf("metrics[%d]: %q listed twice", i, m)
		}
		seen[m] = true
	}
	switch e.Profiler {
	case "", "perf", "pprof":
	default:
		return fmt.Errorf("profiler: %q, want \"perf\" or \"pprof\"", e.Profiler)
	}
	if e.Primary != "" && len(e.Metrics) > 0 && !seen[e.Primary] {
		return fmt.Errorf("primary: %q is not one of metrics %q", e.Primary, e.Metrics)
	}
	if e.Primary != "" && (strings.TrimSpace(e.Primary) == "" || strings.ContainsAny(e.Primary, " \t=")) {
		return fmt.Errorf("primary: %q is not a metric name", e.Primary)
	}
	return nil
}

// validateArms checks that the builds are keyed by the arms: "control"
// and "treatment", or "A", "B", "C", ... for three or more builds.
func (e *Experiment) validateArms() error {
	keys := e.ArmKeys()
	want := `"control" and "treatment"`
	if len(keys) > 2 {
		want = fmt.Sprintf(`"A" (the base) to %q, one per build`, keys[len(keys)-1])
	}
	if len(e.Builds) > MaxArms {
		return fmt.Errorf("builds: %d builds, want at most %d", len(e.Builds), MaxArms)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Builds)) {
		if !slices.Contains(keys, k) {
			return fmt.Errorf(`builds.%s: unknown build (want %s, or a list of builds, the base first)`, k, want)
		}
	}
	for _, k := range keys {
		if _, ok := e.Builds[k]; !ok {
			return fmt.Errorf("builds.%s: missing", k)
		}
	}
	return nil
}

// Validate checks the controls that do not depend on the device.
func (c *Controls) Validate() error {
	if c.PinCPU != nil && *c.PinCPU < -1 {
		return fmt.Errorf("controls.pin_cpu: %d, want a CPU number or -1 (no pinning)", *c.PinCPU)
	}
	if c.PinCPU != nil {
		if err := CheckRange("controls.pin_cpu", *c.PinCPU, -1, MaxCPU); err != nil {
			return err
		}
	}
	switch c.Proxy {
	case "", "off", "record", "replay":
	default:
		return fmt.Errorf("controls.proxy: %q, want off, record or replay", c.Proxy)
	}
	for i, p := range c.Prepare {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("controls.prepare[%d]: empty command", i)
		}
	}
	for i, p := range c.Cleanup {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("controls.cleanup[%d]: empty command", i)
		}
	}
	return nil
}

// ASLROff reports whether the controls ask for address-space randomisation off.
func (c *Controls) ASLROff() bool { return c.ASLR != nil && !*c.ASLR }

// PinnedCPU returns the CPU to pin trials to, or -1 for none.
func (c *Controls) PinnedCPU() int {
	if c.PinCPU == nil {
		return -1
	}
	return *c.PinCPU
}
