package tui

import (
	"context"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/study"
)

// Runner is the live side of lab.Runner the workbench drives. Every live
// method is recorded by the runner as a toggle or note event, effective from
// the next round.
type Runner interface {
	Run(ctx context.Context) <-chan lab.Event
	SetOrder(mode string) error
	SetControls(c lab.Controls) error
	Pause() error
	Resume() error
	AddNote(text string) error
}

// SessionWriter appends events to a session file (sessions.Writer).
type SessionWriter interface {
	Write(ev lab.Event) error
	Close() error
}

// BuildChoice is one build the build picker offers.
type BuildChoice struct {
	Label  string    // what the list shows
	Detail string    // one line under it (effect, command, package)
	Build  lab.Build // what goes into the experiment
}

// Backend is everything the workbench needs from the lab. cli/tui.go wires
// the real packages (lab/devices, lab, sessions); tests may substitute parts.
// A nil function means the feature is unavailable and the UI says so.
type Backend struct {
	// ListDevices lists every device of every backend.
	ListDevices func(ctx context.Context) ([]lab.DeviceInfo, error)
	// OpenDevice opens a device by id ("sim:<preset>", "local",
	// "adb:<serial>"); realtime paces a simulated device at wall-clock speed.
	OpenDevice func(ctx context.Context, id string, realtime bool) (lab.Device, error)
	// NewRunner prepares a run of exp on dev.
	NewRunner func(dev lab.Device, exp *lab.Experiment) Runner
	// CreateSession creates the session file at path for a run of exp on dev.
	CreateSession func(path string, dev lab.DeviceInfo, exp *lab.Experiment) (SessionWriter, error)
	// Builds lists the ready-made builds for a device (sim apps with known
	// effects, for instance).
	Builds func(dev lab.DeviceInfo) []BuildChoice
	// StartStudy runs a validation or order study (lab/study) in the
	// background. The channel carries progress after every run; the last
	// update holds the result or the error, then the channel closes.
	StartStudy func(ctx context.Context, p StudyPlan) <-chan study.Update
}

// Study kinds the stepper offers besides a single run.
const (
	StudyValidate = "validate"
	StudyOrder    = "order"
)

// StudyPlan is a study the workbench asks the lab to run, with the
// settings the stepper chose. The device is Experiment.Device.
type StudyPlan struct {
	Study      string          // StudyValidate or StudyOrder
	Experiment *lab.Experiment // builds, trials, order, controls, seed
	// AA is the number of A/A experiments (validate).
	AA int
	// EffectPct is the known effect in % (validate; 0 runs none). On the
	// simulated phone it is injected; elsewhere it is the difference the
	// user declares the treatment has.
	EffectPct float64
	// Runs is N, the repetitions of a fixed-order and a random-order run
	// (order).
	Runs int
}
