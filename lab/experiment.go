package lab

import "encoding/json"

// Experiment is the experiment file (JSON). See docs/experiment-file.md for every field.
type Experiment struct {
	Device string `json:"device,omitempty"` // "local", "sim:<preset>", "adb:<serial>", or a pool selector "adb:model=<model>"
	// Devices is a pool: the experiment runs its rounds on all of them at
	// once (each round on one device). Either Device or Devices is given.
	Devices []string `json:"devices,omitempty"`
	// Builds are keyed by arm: "control" and "treatment" for an A/B; with
	// three or more builds "A" (the base), "B", "C", ... An experiment file
	// may also give a list of builds, the base first (ParseExperiment).
	Builds   map[string]Build `json:"builds"`
	Trials   int              `json:"trials"` // counted trials per arm
	Warmup   int              `json:"warmup"` // warm-up rounds, recorded but not analysed
	Order    string           `json:"order"`  // fixed | alternate | random
	Seed     int64            `json:"seed"`
	Controls Controls         `json:"controls"`
	Metrics  []string         `json:"metrics,omitempty"`
	// Primary names the primary metric: the one "stop": "auto" watches,
	// tested at the full alpha while the others are corrected among
	// themselves (analysis/family.go). Default: the first of Metrics, else
	// the first metric the trials report.
	Primary    string  `json:"primary,omitempty"`
	Alpha      float64 `json:"alpha,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	// Threshold is the practical threshold in % of the control's median:
	// a change whose whole CI lies within ±Threshold is "no change"
	// (analysis.Options.ThresholdPct). 0: any significant change counts.
	Threshold float64 `json:"threshold,omitempty"`
	// Stop is "fixed" (default: run Trials per arm) or "auto": stop as soon
	// as the verdict of the primary metric (PrimaryMetric), from the
	// sequential paired analysis calibrated to MaxTrials, is decided, or at
	// MaxTrials per arm.
	Stop string `json:"stop,omitempty"`
	// SequentialTrim is the share of the per-round log ratios the
	// sequential analysis of stop "auto" cuts from each end
	// (analysis.SequentialOptions.Trim; perflab suite: 0.2); 0 or absent
	// looks at their mean.
	SequentialTrim float64       `json:"sequential_trim,omitempty"`
	MaxTrials      int           `json:"max_trials,omitempty"`    // stop "auto": the cap per arm (default: trials)
	TrialTimeout   float64       `json:"trial_timeout,omitempty"` // seconds; 0 = none
	Proxy          *ProxyOptions `json:"proxy,omitempty"`         // record/replay proxy settings (controls.proxy)
	// Profile collects a sampling CPU profile of every trial after the
	// warm-up, on devices that can (lab.Profiler), labelled with the
	// experiment's context and the app's phases (perflab profile).
	Profile bool `json:"profile,omitempty"`
	// ProfileEvery, above 1, profiles one round in ProfileEvery (both
	// arms of that round; "profile": {"every": K} in the experiment
	// file): the metrics' verdicts come from the unprofiled rounds, the
	// per-function analysis from the profiled ones, so the profiler's
	// perturbation stays out of the timing. 0 or 1: every round.
	ProfileEvery int `json:"profile_every,omitempty"`
	// Suite describes a benchmark suite's session (perflab suite): its
	// metrics are benchmarks, compared with no primary and
	// Benjamini–Hochberg's correction across them.
	Suite *SuiteInfo `json:"suite,omitempty"`
	// Profiler picks the local device's profiler: "perf" (default: perf
	// record) or "pprof" (the program writes its own Go CPU profile to
	// $PERFLAB_CPUPROFILE).
	Profiler string `json:"profiler,omitempty"`
}

// ProfiledRound reports whether the plan profiles round's trials
// (after the warm-up): every round, or one in ProfileEvery.
func (e *Experiment) ProfiledRound(round int) bool {
	return e.Profile && (e.ProfileEvery <= 1 || round%e.ProfileEvery == 0)
}

// PrimaryMetric is the primary metric the plan names: Primary, else the
// first of Metrics; "" when neither says (the first metric the trials
// report is then primary).
func (e *Experiment) PrimaryMetric() string {
	switch {
	case e.Primary != "":
		return e.Primary
	case len(e.Metrics) > 0:
		return e.Metrics[0]
	}
	return ""
}

// DeviceList returns the devices (or pool selectors) the experiment names:
// Devices, or Device alone.
func (e *Experiment) DeviceList() []string {
	if len(e.Devices) > 0 {
		return e.Devices
	}
	if e.Device == "" {
		return nil
	}
	return []string{e.Device}
}

// SetDevices names the devices of a run: one becomes Device, several a
// pool in Devices.
func (e *Experiment) SetDevices(ids []string) {
	e.Device, e.Devices = "", nil
	switch len(ids) {
	case 0:
	case 1:
		e.Device = ids[0]
	default:
		e.Devices = append([]string(nil), ids...)
	}
}

// MaxArms is the most builds an experiment may compare.
const MaxArms = 26

// ArmKeys returns the arms in base order: "control" and "treatment" for
// an A/B, else "A", "B", ... one per build.
func (e *Experiment) ArmKeys() []string {
	n := len(e.Builds)
	if _, ok := e.Builds[ArmControl]; ok || n <= 2 {
		return []string{ArmControl, ArmTreatment}
	}
	keys := make([]string, min(n, MaxArms))
	for i := range keys {
		keys[i] = ArmKeyAt(i, n)
	}
	return keys
}

// MultiArm reports whether the experiment compares more than two builds.
func (e *Experiment) MultiArm() bool { return len(e.ArmKeys()) > 2 }

// ArmKeyAt names the i-th build of a list of n: "control" and "treatment"
// when n is 2, else the letters "A" (the base), "B", "C", ...
func ArmKeyAt(i, n int) string {
	if n == 2 {
		return []string{ArmControl, ArmTreatment}[i]
	}
	return string(rune('A' + i))
}

// ArmIndex is the position of an arm key in base order: control 0,
// treatment 1, "A" 0, "B" 1, "C" 2, ... The keys alone fix the order, so
// a session's trials can be folded without its plan.
func ArmIndex(arm string) (int, bool) {
	switch {
	case arm == ArmControl:
		return 0, true
	case arm == ArmTreatment:
		return 1, true
	case len(arm) == 1 && arm[0] >= 'A' && arm[0] < 'A'+MaxArms:
		return int(arm[0] - 'A'), true
	}
	return 0, false
}

// SetBuilds replaces the builds with list, base first, keyed by ArmKeyAt.
func (e *Experiment) SetBuilds(list []Build) {
	e.Builds = make(map[string]Build, len(list))
	for i, b := range list {
		e.Builds[ArmKeyAt(i, len(list))] = b
	}
}

// Stop modes.
const (
	StopFixed = "fixed"
	StopAuto  = "auto"
)

// TrialCap is the most counted trials per arm the run may take: MaxTrials
// with stop "auto" (when set), else Trials.
func (e *Experiment) TrialCap() int {
	if e.Stop == StopAuto && e.MaxTrials > 0 {
		return e.MaxTrials
	}
	return e.Trials
}

// MetricRoundsCap is the most rounds one metric can get: TrialCap, or
// for a benchmark suite, whose round runs one benchmark
// (BenchSpec.TrialCommand), TrialCap shared by its benchmarks. The
// group-sequential design of "stop": "auto" is calibrated to it.
func (e *Experiment) MetricRoundsCap() int {
	c := e.TrialCap()
	if b, ok := e.Builds[ArmControl]; ok && e.Suite != nil && b.Bench != nil && b.Bench.Count() > 0 {
		c = max(c/b.Bench.Count(), 1)
	}
	return c
}

// ProxyOptions configures the HTTP record/replay proxy that controls.proxy
// turns on (see lab/proxy).
type ProxyOptions struct {
	// File is the recording; default: next to the session, "<session>.proxy.jsonl".
	File string `json:"file,omitempty"`
	// IgnoreHeaders are request headers left out of matching ("*": all).
	IgnoreHeaders []string `json:"ignore_headers,omitempty"`
	// IgnoreQuery are query parameters left out of matching ("prefix*" allowed).
	IgnoreQuery []string `json:"ignore_query,omitempty"`
	// Timing is "recorded" (default: replay waits as long as the recording
	// did) or "none".
	Timing string `json:"timing,omitempty"`
	// Target is the origin for requests that arrive with a relative URL
	// (apps pointed straight at the proxy through adb reverse).
	Target string `json:"target,omitempty"`
	// HTTPS is "intercept" (default: decrypt with the proxy's own CA, so
	// HTTPS is recorded and replayed) or "tunnel" (pass through, unrecorded).
	HTTPS string `json:"https,omitempty"`
	// Redact: unset or true, the recording replaces the values of
	// Authorization, Cookie, Set-Cookie and RedactHeaders with "[redacted
	// by perflab]" (and leaves them out of matching); false keeps every
	// header as sent and received (opt-out).
	Redact *bool `json:"redact,omitempty"`
	// RedactHeaders are more headers to redact, e.g. "X-Api-Key".
	RedactHeaders []string `json:"redact_headers,omitempty"`
}

// Build is one version of the software under test. Which fields apply
// depends on the device backend.
type Build struct {
	Name string `json:"name,omitempty"`
	// local
	Command []string          `json:"command,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// sim
	App       string  `json:"app,omitempty"`        // simulated app, e.g. "feed"
	EffectPct float64 `json:"effect_pct,omitempty"` // known true effect vs the app's base cost
	// Effect slows (or speeds) one function of the simulated app by a
	// known percentage of its own time, for profiles with a known truth.
	Effect *FunctionEffect `json:"effect,omitempty"`
	// Output, on local, says what the command prints: "gobench" for `go
	// test -bench` result lines, each value–unit pair a metric (the
	// benchmark's name, with ":UNIT" for units other than ns/op), instead
	// of the device's own wall/user/sys metrics (perflab suite).
	Output string `json:"output,omitempty"`
	// Bench, for a benchmark suite (perflab suite), lists its test
	// binaries and benchmarks: each trial runs the benchmarks the run
	// still wants in the round's order (BenchSpec.TrialCommand) in place
	// of Command, which lists them all.
	Bench *BenchSpec `json:"bench,omitempty"`
	// Files is a local folder a remote worker (ssh) copies to a private
	// temporary folder of its own before the run and runs the command
	// in; its subfolder named for the worker's platform (linux_arm64),
	// when there is one, is copied instead. Local devices run the command
	// in Dir.
	Files string `json:"files,omitempty"`
	// adb
	APK      string `json:"apk,omitempty"`
	Package  string `json:"package,omitempty"`
	Activity string `json:"activity,omitempty"`
}

// SuiteInfo is what perflab suite compared: a Go module's benchmarks at
// two revisions.
type SuiteInfo struct {
	Module    string   `json:"module"`
	Base      string   `json:"base"`     // the revision as given, and
	BaseRev   string   `json:"base_rev"` // its commit
	Head      string   `json:"head"`     // "work tree" or a revision
	HeadRev   string   `json:"head_rev"`
	Packages  []string `json:"packages"`
	Bench     string   `json:"bench"`     // -bench regexp
	Benchtime string   `json:"benchtime"` // per benchmark run
	// Metrics names the families of tests (SuiteFamilies): "" for one
	// family of every metric (sessions before families), else a comma
	// list of time, alloc and custom, or all.
	Metrics string `json:"metrics,omitempty"`
	// Shard is "K/N" for one shard of a suite run across N jobs
	// (perflab suite --shard), ShardOf the benchmark functions of all N.
	Shard   string `json:"shard,omitempty"`
	ShardOf int    `json:"shard_of,omitempty"`
}

// FunctionEffect is a known change of one function's time in a simulated
// build: {"function": "feed.decodeImage", "pct": 3}.
type FunctionEffect struct {
	Function string  `json:"function"`
	Pct      float64 `json:"pct"`
}

// Controls are the noise controls applied around trials.
type Controls struct {
	// local reset procedure
	Prepare  []string `json:"prepare,omitempty"`
	Cleanup  []string `json:"cleanup,omitempty"`
	StateDir string   `json:"state_dir,omitempty"`
	ASLR     *bool    `json:"aslr,omitempty"` // nil or true: ASLR on; false: setarch -R
	PinCPU   *int     `json:"pin_cpu,omitempty"`
	// phone (sim, adb)
	Governor        json.RawMessage `json:"governor,omitempty"` // profile name (string) or inline GovernorProfile
	RestoreSnapshot bool            `json:"restore_snapshot,omitempty"`
	KillApp         bool            `json:"kill_app,omitempty"`
	DismissDialogs  bool            `json:"dismiss_dialogs,omitempty"`
	ClockReset      bool            `json:"clock_reset,omitempty"`
	Proxy           string          `json:"proxy,omitempty"` // off | record | replay
	Tmpfs           bool            `json:"tmpfs,omitempty"`
	DropCaches      bool            `json:"drop_caches,omitempty"`
	Cachegrind      bool            `json:"cachegrind,omitempty"` // local: add the cachegrind metric
}

// GovernorProfile is a set of frequency and thermal settings.
type GovernorProfile struct {
	Name        string           `json:"name,omitempty"`
	Clusters    []ClusterSetting `json:"clusters,omitempty"`
	GPU         *GPUSetting      `json:"gpu,omitempty"`
	ThermalCore *bool            `json:"thermal_core_control,omitempty"`
	InputBoost  *int             `json:"input_boost_khz,omitempty"` // 0 disables
	MPDecision  *bool            `json:"mpdecision,omitempty"`
	Keep        bool             `json:"keep,omitempty"` // do not restore on exit
}

// ClusterSetting sets one CPU cluster (all its cores).
type ClusterSetting struct {
	CPUs     []int  `json:"cpus"`
	Governor string `json:"governor,omitempty"`
	MinKHz   int    `json:"min_khz,omitempty"`
	MaxKHz   int    `json:"max_khz,omitempty"`
}

// GPUSetting sets the kgsl GPU.
type GPUSetting struct {
	Governor string `json:"governor,omitempty"`
	MinHz    int64  `json:"min_hz,omitempty"`
	MaxHz    int64  `json:"max_hz,omitempty"`
}
