package lab

// Event kinds written to a session, one per line after the header.
const (
	EventSettings = "settings" // controls or governor profile applied
	EventProbe    = "probe"    // one MFLOPS probe sample
	EventTrial    = "trial"    // one finished (or failed) trial
	EventToggle   = "toggle"   // the user changed order or a control mid-run
	EventNote     = "note"     // a free-text note from the user
	EventEnd      = "end"      // the run ended; says why
	// EventDevice records a pool's device changing state: offline (it
	// left the pool and may come back), back (it rejoined) or left (its
	// runner ended early; it is gone for the rest of the run).
	EventDevice = "device"
	// EventStart records that a pool's device started a trial: the lanes
	// of the workbench show the trial in progress. Only a pool writes it.
	EventStart = "start"
)

// States of a pool's device in a device event.
const (
	DeviceOffline = "offline" // lost; its round is redone elsewhere; it rejoins when back
	DeviceBack    = "back"    // rejoined the pool after being offline
	DeviceLeft    = "left"    // its runner ended early; the others go on
)

// ValidDeviceState reports whether s is a state a device event may carry.
func ValidDeviceState(s string) bool {
	return s == DeviceOffline || s == DeviceBack || s == DeviceLeft
}

// Arms of an A/B experiment.
const (
	ArmControl   = "control"   // A, known good
	ArmTreatment = "treatment" // B, unknown
)

// Trial statuses. Only StatusOK trials that are not warm-ups count toward N.
const (
	StatusOK      = "ok"
	StatusFailed  = "failed"  // non-zero exit, malformed metric, device error
	StatusTimeout = "timeout" // exceeded trial_timeout
	// StatusInterrupted is a trial the run's end (Ctrl-C, an abort) cut
	// short: not counted, and not a failure of its build.
	StatusInterrupted = "interrupted"
)

// Event is one line of a session after the header. Exactly one of the
// pointer fields matching Type is set. T is seconds since the session start.
type Event struct {
	Type     string       `json:"type"`
	T        float64      `json:"t"`
	Settings *Settings    `json:"settings,omitempty"`
	Probe    *ProbeSample `json:"probe,omitempty"`
	Trial    *Trial       `json:"trial,omitempty"`
	Toggle   *Toggle      `json:"toggle,omitempty"`
	Note     *Note        `json:"note,omitempty"`
	End      *End         `json:"end,omitempty"`
	Device   *DeviceState `json:"device,omitempty"`
	Start    *TrialStart  `json:"start,omitempty"`
}

// DeviceState is a pool's word about one of its devices (EventDevice).
type DeviceState struct {
	Device string `json:"device"`
	State  string `json:"state"` // DeviceOffline, DeviceBack or DeviceLeft
	// Reason says why: the device's error when offline, the end of its
	// runner when it left.
	Reason string `json:"reason,omitempty"`
}

// TrialStart is a trial a pool's device has begun (EventStart); the trial
// event that follows it for the same device is its result.
type TrialStart struct {
	Device string `json:"device"`
	Round  int    `json:"round"`
	Arm    string `json:"arm"`
	Warmup bool   `json:"warmup,omitempty"`
}

// Metric is one named measurement of a trial.
type Metric struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"`
	Better string  `json:"better,omitempty"` // "lower" (default) or "higher"
}

// Trial is the record of one execution of one build.
type Trial struct {
	Index  int    `json:"index"` // 0-based sequence over the whole session
	Round  int    `json:"round"` // 0-based round; a round holds one trial per arm
	Arm    string `json:"arm"`
	Build  string `json:"build"`
	Warmup bool   `json:"warmup,omitempty"`
	// Device is the device the trial ran on, in a session over a pool of
	// devices; empty in a single-device session (the header names it) and
	// in files written before pools existed.
	Device   string   `json:"device,omitempty"`
	Order    string   `json:"order"` // order mode in force for this round
	Status   string   `json:"status"`
	Reason   string   `json:"reason,omitempty"`
	Duration float64  `json:"duration_s"`
	Metrics  []Metric `json:"metrics"`
	// Host is how busy the host was with other work during the trial, on
	// the local device; nil elsewhere and in files written before it was
	// recorded. It is no metric: nothing tests it.
	Host *HostLoad `json:"host,omitempty"`
	// Profile is the trial's CPU profile file, when the experiment asked
	// for profiles ("profile": true): written beside the session before
	// this line (a crash loses at most the trial in flight's).
	Profile *ProfileRef `json:"profile,omitempty"`
	// ProfileRound marks a profiled round's trial of a plan that profiles
	// one round in K (Experiment.ProfileEvery): its metrics stay out of
	// the verdicts, which come from the unprofiled rounds.
	ProfileRound bool `json:"profile_round,omitempty"`
	// Profiled is the profile the device returned, until the session's
	// recorder writes it and sets Profile; never in a file.
	Profiled *Profile `json:"-"`
}

// HostLoad is what else the host did during one trial (the local device
// reads it from /proc/stat and /proc/loadavg).
type HostLoad struct {
	// OtherCPUs is the CPU time the host's other processes used during
	// the trial (all CPUs' busy time less the command's and perflab's
	// own) over the trial's wall time, in CPUs. /proc/stat counts in
	// clock ticks (10 ms), so a trial of a few milliseconds reads one
	// tick or none: its own value is coarse, and can be below 0, while the
	// average over many trials is not biased.
	OtherCPUs float64 `json:"other_cpus"`
	Load1     float64 `json:"load1"` // 1-minute load average at the trial's end (the trial included)
	CPUs      int     `json:"cpus"`  // online CPUs
}

// Counted reports whether the trial counts toward the analysis.
func (t *Trial) Counted() bool { return t.Status == StatusOK && !t.Warmup }

// ProbeSample is one MFLOPS measurement of the stability probe.
type ProbeSample struct {
	T       float64 `json:"t"` // seconds since the probe started
	MFLOPS  float64 `json:"mflops"`
	FreqKHz []int   `json:"freq_khz,omitempty"` // current frequency per cluster, when readable
	TempC   float64 `json:"temp_c,omitempty"`
}

// Settings records controls and governor settings as applied and read back.
type Settings struct {
	Order      string            `json:"order,omitempty"`
	Controls   *Controls         `json:"controls,omitempty"`
	Profile    *GovernorProfile  `json:"profile,omitempty"`
	Mismatches []string          `json:"mismatches,omitempty"` // files whose read-back differs
	Detail     map[string]string `json:"detail,omitempty"`
	// Device names the device these settings were applied on, in a pool
	// whose devices' settings differ; empty when they apply to the whole
	// pool (or to the session's one device).
	Device string `json:"device,omitempty"`
}

// Toggle records a change made while running, effective from Round.
type Toggle struct {
	What  string `json:"what"` // "order", "pause", "resume", or a control name
	From  string `json:"from,omitempty"`
	To    string `json:"to"`
	Round int    `json:"round"`
}

// Note is a free-text annotation.
type Note struct {
	Text string `json:"text"`
}

// End closes a run. Reason is "completed", "cancelled", "error" or "device-lost".
type End struct {
	Reason string         `json:"reason"`
	Error  string         `json:"error,omitempty"`
	Counts map[string]int `json:"counts,omitempty"` // trials by status
	// Stop says why a run with "stop": "auto" stopped: the sequential
	// decision and its reason, or that it reached max_trials undecided.
	Stop string `json:"stop,omitempty"`
}
