// Package sessions reads and writes perflab session files: JSON Lines with a
// header line followed by one event per line, appended and synced as a run
// goes, so a crash loses at most the trial in flight.
package sessions

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/perflab/perflab/lab"
)

// Format and Version identify a session file's header line.
const (
	Format  = "perflab-session"
	Version = 1
)

// Header is the first line of a session.
type Header struct {
	Format  string         `json:"format"`
	Version int            `json:"version"`
	ID      string         `json:"id"`
	Created time.Time      `json:"created"`
	Tool    string         `json:"tool"` // e.g. "perflab 0.1.0"
	Seed    int64          `json:"seed"`
	Source  string         `json:"source,omitempty"` // experiment file the plan came from
	Host    string         `json:"host,omitempty"`
	Device  lab.DeviceInfo `json:"device"`
	// Devices describes every device of a session run on a pool (Device is
	// then the first); absent for one device and in older files.
	Devices []lab.DeviceInfo `json:"devices,omitempty"`
	Plan    lab.Experiment   `json:"plan"`
}

// NewHeader returns a header for a new session of exp on dev, with a fresh
// ID and the current time.
func NewHeader(tool string, dev lab.DeviceInfo, exp *lab.Experiment) Header {
	now := time.Now().UTC()
	return Header{
		Format:  Format,
		Version: Version,
		ID:      NewID(now),
		Created: now,
		Tool:    tool,
		Seed:    exp.Seed,
		Device:  dev,
		Plan:    *exp,
	}
}

// NewID returns a sortable, unique session ID such as "20261122-014512-3fa9c1".
func NewID(t time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Session is a loaded session file.
type Session struct {
	Path     string
	Header   Header
	Events   []lab.Event
	Problems []LineError // lines that could not be read, skipped
}

// LineError is one unreadable line of a session file.
type LineError struct {
	Line int    `json:"line"`
	Err  string `json:"error"`
}

func (e LineError) String() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Err }

// Trials returns the trial events' trials in order.
func (s *Session) Trials() []*lab.Trial {
	return Trials(s.Events)
}

// Trials returns the trials among events, in order.
func Trials(events []lab.Event) []*lab.Trial {
	var out []*lab.Trial
	for i := range events {
		if events[i].Type == lab.EventTrial && events[i].Trial != nil {
			out = append(out, events[i].Trial)
		}
	}
	return out
}

// End returns the session's end event, or nil if the run never finished
// (for example it was killed).
func (s *Session) End() *lab.End {
	for i := len(s.Events) - 1; i >= 0; i-- {
		if s.Events[i].Type == lab.EventEnd && s.Events[i].End != nil {
			return s.Events[i].End
		}
	}
	return nil
}

// Counts are trial counts of a session.
type Counts struct {
	Total    int            `json:"total"`
	ByStatus map[string]int `json:"by_status"`
	Warmup   int            `json:"warmup"`
	// WarmupFailed are the warm-ups that failed or timed out (also in
	// ByStatus), so a summary can add up to Total.
	WarmupFailed int            `json:"warmup_failed,omitempty"`
	Counted      map[string]int `json:"counted"` // counted trials per arm
}

// CountTrials counts the trials among events by status, warm-up and arm;
// arms (default: control and treatment) are listed even with no trial.
func CountTrials(events []lab.Event, arms ...string) Counts {
	c := NewCounts(arms...)
	// A session's trials have a handful of statuses and arms: they are
	// tallied in a few slots and go into the maps once.
	status, counted := tally{m: c.ByStatus}, tally{m: c.Counted}
	for i := range events {
		t := events[i].Trial
		if events[i].Type != lab.EventTrial || t == nil {
			continue
		}
		c.count(t, status.add, counted.add)
	}
	status.flush()
	counted.flush()
	return c
}

// tally counts strings into m, the first few in slots of its own until
// flush.
type tally struct {
	keys [8]string
	n    [8]int
	used int
	m    map[string]int
}

func (t *tally) add(k string) {
	for i := range t.used {
		if t.keys[i] == k {
			t.n[i]++
			return
		}
	}
	if t.used == len(t.keys) {
		t.m[k]++
		return
	}
	t.keys[t.used], t.n[t.used] = k, 1
	t.used++
}

func (t *tally) flush() {
	for i := range t.used {
		t.m[t.keys[i]] += t.n[i]
	}
	t.used = 0
}

// NewCounts returns empty counts with every arm present with zero (no
// arms: control and treatment).
func NewCounts(arms ...string) Counts {
	if len(arms) == 0 {
		arms = []string{lab.ArmControl, lab.ArmTreatment}
	}
	c := Counts{ByStatus: map[string]int{}, Counted: make(map[string]int, len(arms))}
	for _, a := range arms {
		c.Counted[a] = 0
	}
	return c
}

// Add counts one trial.
func (c *Counts) Add(t *lab.Trial) {
	c.count(t, func(s string) { c.ByStatus[s]++ }, func(a string) { c.Counted[a]++ })
}

// count holds the rules of counting a trial, for Add and CountTrials: its
// status goes to status, and its arm, when the trial counts, to counted.
func (c *Counts) count(t *lab.Trial, status, counted func(string)) {
	c.Total++
	status(t.Status)
	if t.Warmup {
		c.Warmup++
		if t.Status != lab.StatusOK {
			c.WarmupFailed++
		}
	}
	if t.Counted() {
		counted(t.Arm)
	}
}
