package tui

import (
	"time"

	"github.com/perflab/perflab/lab"
)

// devicesListedMsg carries the result of a device listing.
type devicesListedMsg struct {
	devices []lab.DeviceInfo
	err     error
}

// runStartedMsg says the device is open, the session file created and the
// runner started (or why not).
type runStartedMsg struct {
	stream int
	run    *liveRun
	err    error
}

// eventsArrivedMsg carries the events read from a stream since the last
// message; closed means the stream has ended.
type eventsArrivedMsg struct {
	stream int // which stream (a new run or check gets a new number)
	events []lab.Event
	closed bool
	err    error // a session write error, if any
}

// reportComputedMsg carries the analysis of the trials counted up to version.
type reportComputedMsg struct {
	stream  int // the stream of the dashboard that asked
	version int
	final   bool
	panel   panelData
	took    time.Duration
}

// replayTickedMsg advances a replay.
type replayTickedMsg struct {
	stream int
	gen    int
	at     time.Time
}

// savedMsg reports a failure to save the recent builds or the last
// choices.
type savedMsg struct{ err error }

// streamMsg is a message of one stream (a run, a check, a replay, a
// study): the root routes it to the pane that owns the stream, in front
// or not.
type streamMsg interface{ streamID() int }

func (m runStartedMsg) streamID() int     { return m.stream }
func (m eventsArrivedMsg) streamID() int  { return m.stream }
func (m reportComputedMsg) streamID() int { return m.stream }
func (m replayTickedMsg) streamID() int   { return m.stream }
func (m studyStartedMsg) streamID() int   { return m.stream }
func (m studyUpdatedMsg) streamID() int   { return m.stream }
