package lab

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Capability names. A device lists the ones it supports in DeviceInfo.Caps so
// the UI can grey out what it cannot do. Control capabilities use the same
// names as the experiment file's controls. CapProbe and CapGovernor are
// never listed by hand: DeriveCaps adds them for the interfaces a device
// implements.
const (
	CapGovernor        = "governor"
	CapRestoreSnapshot = "restore_snapshot"
	CapKillApp         = "kill_app"
	CapDismissDialogs  = "dismiss_dialogs"
	CapClockReset      = "clock_reset"
	CapProxy           = "proxy"
	CapTmpfs           = "tmpfs"
	CapDropCaches      = "drop_caches"
	CapStateDir        = "state_dir"
	CapPrepare         = "prepare" // prepare/cleanup commands
	CapASLR            = "aslr"
	CapPinCPU          = "pin_cpu"
	CapProbe           = "probe"          // MFLOPS stability probe
	CapReverse         = "reverse"        // device can reach a host port (adb reverse)
	CapSimTime         = "sim_time"       // runs on simulated time (paced at wall-clock speed or instant); its builds carry a known true effect
	CapCommandBuilds   = "command_builds" // builds are command lines run as processes on the device
	CapAPKBuilds       = "apk_builds"     // builds are Android packages (an APK file or an installed package)
)

// DeviceInfo describes a device as listed and as recorded in a session header.
type DeviceInfo struct {
	ID      string            `json:"id"`      // "local", "sim:<preset>", "adb:<serial>"
	Backend string            `json:"backend"` // "local", "sim", "adb"
	Model   string            `json:"model,omitempty"`
	State   string            `json:"state,omitempty"` // "device", "offline", "unauthorized"
	Server  string            `json:"server,omitempty"`
	Caps    []string          `json:"caps"`
	Props   map[string]string `json:"props,omitempty"`
	Notes   []string          `json:"notes,omitempty"` // e.g. "cpufreq not writable: needs root"
}

// Has reports whether the device supports capability c.
func (d DeviceInfo) Has(c string) bool {
	for _, x := range d.Caps {
		if x == c {
			return true
		}
	}
	return false
}

// TrialRequest asks a device to run one trial. Controls are the ones in force
// for this trial (they may change between rounds).
type TrialRequest struct {
	Index    int
	Round    int
	Arm      string
	BuildKey string // the arm's key in Experiment.Builds
	Build    Build
	Warmup   bool
	Controls Controls
	Metrics  []string // requested metrics; empty means the device's defaults
	// Profile asks a Profiler for the trial's CPU profile
	// (TrialResult.Profile).
	Profile bool
	// Started, when not nil, is for a TrialStartReporter to call once the
	// trial is under way (see TrialStartReporter); calling it again, or
	// from a device that is not one, does no harm.
	Started func()
}

// TrialUnderWay calls req.Started, if any.
func (req *TrialRequest) TrialUnderWay() {
	if req.Started != nil {
		req.Started()
	}
}

// TrialResult is what a device reports for one trial. Status is StatusOK,
// StatusFailed or StatusTimeout; Reason explains a failure.
type TrialResult struct {
	Status  string
	Reason  string
	Metrics []Metric
	// Lost says the device went away during the trial (adb offline,
	// connection broken): the runner pauses and, when the device is a
	// Reconnector, waits for it to come back.
	Lost bool
	// Host is how busy the host was with other work during the trial,
	// when the device can tell (local); it is copied to Trial.Host.
	Host *HostLoad
	// Profile is the trial's CPU profile when TrialRequest.Profile asked
	// for one; ProfileNote says why there is none, or what was lost.
	Profile     *Profile
	ProfileNote string
}

// Reconnector is a device that can wait for itself to come back after a
// trial reported Lost, redoing its setup (a restarted phone forgets it).
// It returns an error when the device does not return in its own time
// limit or ctx ends.
type Reconnector interface {
	Reconnect(ctx context.Context) error
}

// VirtualClock is a device on simulated time. VirtualTime returns its own
// clock (time since it booted) and whether that clock runs free of the
// wall clock (instant, not paced at wall-clock speed). A pool whose every
// device runs free is a deterministic discrete-event schedule (see Pool).
type VirtualClock interface {
	VirtualTime() (t time.Duration, free bool)
}

// Device is where trials run.
type Device interface {
	Info() DeviceInfo
	// Setup readies the device for an experiment: installs builds, takes
	// snapshots, applies the governor profile. It is called once per run.
	Setup(ctx context.Context, exp *Experiment) ([]Event, error)
	// RunTrial runs the reset procedure named by req.Controls, then one trial.
	RunTrial(ctx context.Context, req TrialRequest) TrialResult
	// Close restores what Setup changed (unless asked to keep it) and frees resources.
	Close() error
}

// BuildChecker is a device that can tell, without any device I/O, that it
// cannot run a build of exp (a sim build that names no app, a local build
// with no command, an adb build with no package). The error names the field
// (builds.control.app). The session engine asks before it creates a
// session file, so such a run leaves none behind; Setup makes the same
// checks, with the same code, for its other callers.
type BuildChecker interface {
	CheckBuilds(exp *Experiment) error
}

// MetricChecker is a device that can tell, without any device I/O, that it
// cannot give a metric exp asks for (a simulated phone measures a fixed set;
// the local host knows its built-in names but not what a command reports).
// The error names the field (metrics[0]) and lists what the device offers.
// It is BuildChecker's twin, asked at the same point for the same reason:
// the session engine refuses such a run before it creates a session file,
// and Setup makes the same check, with the same code. What needs probing
// (perf, valgrind, GNU time on the local host) stays at Setup.
type MetricChecker interface {
	CheckMetrics(exp *Experiment) error
}

// ControlsChecker is a device that can tell, without any device I/O, that
// it cannot apply the controls of exp (a local host has no app to kill and
// no CPU 12 to pin to; a phone without root cannot mount tmpfs; an adb
// server on another host cannot carry the proxy back without --ssh). The
// error names the field (controls.pin_cpu). It is the third of
// BuildChecker's and MetricChecker's kind, asked at the same point for the
// same reason: the session engine refuses such a run before it creates a
// session file. Setup makes the same check, with the same code, and so does
// each trial for the controls it is given, which the workbench may change
// while the run lasts. What needs the device (applying a governor profile)
// stays at Setup.
type ControlsChecker interface {
	CheckControls(exp *Experiment) error
}

// Prober is a device that can run the MFLOPS stability probe. Samples are
// sent on out until ctx is cancelled or dur (in device time) has elapsed;
// the probe does not close out.
type Prober interface {
	Probe(ctx context.Context, opts ProbeOptions, out chan<- ProbeSample) error
}

// ProbeOptions configures a probe run.
type ProbeOptions struct {
	DurationS float64 // seconds of device time
	IntervalS float64 // seconds per sample
	Size      int     // matrix size
	Realtime  bool    // pace a simulated device at wall-clock speed
}

// Governor is a device whose frequency and thermal settings can be set.
type Governor interface {
	// ReadProfile reads the current settings.
	ReadProfile(ctx context.Context) (GovernorProfile, error)
	// ApplyProfile writes p and reads it back; mismatches lists every file
	// whose read-back differs from what was written.
	ApplyProfile(ctx context.Context, p GovernorProfile) (mismatches []string, err error)
}

// CapChecker is implemented by a device whose capability interfaces may be
// present but unusable on this particular device (no root for the
// governor, no writable cpufreq): CapError says why cap cannot be used, or
// returns nil when it can.
type CapChecker interface {
	CapError(cap string) error
}

// DeriveCaps returns the capabilities of dev: one for each capability
// interface it implements (Prober: CapProbe, Governor: CapGovernor), unless
// it is a CapChecker that says it cannot use it, plus the ones it reports
// (the controls it performs itself during trials). The result is sorted and
// has no duplicates. dev may be a nil pointer of a device type that is not a
// CapChecker (only its type is looked at).
func DeriveCaps(dev any, reported ...string) []string {
	caps := append([]string{}, reported...)
	chk, _ := dev.(CapChecker)
	usable := func(c string) bool { return chk == nil || chk.CapError(c) == nil }
	if _, ok := dev.(Prober); ok && usable(CapProbe) {
		caps = append(caps, CapProbe)
	}
	if _, ok := dev.(Governor); ok && usable(CapGovernor) {
		caps = append(caps, CapGovernor)
	}
	slices.Sort(caps)
	return slices.Compact(caps)
}

// ErrUnsupported is wrapped by errors for capabilities a device lacks.
var ErrUnsupported = errors.New("not supported by this device")
