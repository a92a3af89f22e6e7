package tui

import (
	"context"

	"github.com/perflab/perflab/lab"
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

// Backend is everything the workbench needs from the lab. cmd_tui.go wires
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
}
