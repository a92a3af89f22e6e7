package tui

import (
	"context"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/study"
)

// Runner is the live side of a run the workbench drives (engine.Runner).
type Runner = engine.Runner

// BuildChoice is one build the build picker offers.
type BuildChoice struct {
	Label  string    // what the list shows
	Detail string    // one line under it (effect, command, package)
	Build  lab.Build // what goes into the experiment
}

// Backend is everything the workbench needs from the lab. cli/tui.go wires
// the real packages (lab/devices, sessions/engine); tests may substitute parts.
// A nil function means the feature is unavailable and the UI says so.
type Backend struct {
	// ListDevices lists every device of every backend.
	ListDevices func(ctx context.Context) ([]lab.DeviceInfo, error)
	// Lab opens devices (also for the stability check), runners and
	// session files; runs go through the session engine (sessions/engine).
	Lab engine.Lab
	// Tool is recorded in session headers ("perflab 0.1.0").
	Tool string
	// Builds lists the ready-made builds for a device (sim apps with known
	// effects, for instance).
	Builds func(dev lab.DeviceInfo) []BuildChoice
	// StartStudy runs a validation or order study (sessions/study) in the
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
