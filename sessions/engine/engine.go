// Package engine runs a session: it opens the device, writes the header
// and creates the session file, runs the optional stability probe before
// the first trial, drives the runner, records every event before relaying
// it, and folds events into analysis inputs (Fold) with options derived
// from the plan (Options). perflab run --headless, the workbench and the
// validate and order studies are views over it; none repeats a step.
package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/proxy"
	"github.com/perflab/perflab/sessions"
)

// Runner is the live side of lab.Runner that views drive. Every live method
// is recorded by the runner as a toggle or note event, effective from the
// next round.
type Runner interface {
	Run(ctx context.Context) <-chan lab.Event
	SetOrder(mode string) error
	SetControls(c lab.Controls) error
	Pause() error
	Resume() error
	AddNote(text string) error
}

// Writer appends events to a session file (sessions.Writer).
type Writer interface {
	Write(ev lab.Event) error
	Close() error
}

// Lab is how the engine reaches devices and session files. Open is
// required; Create defaults to sessions.Create (or CreateOverwrite) and
// Resolve to taking the devices as IDs. Tests substitute fakes.
type Lab struct {
	// Open opens a device by id ("sim:<preset>", "local", "adb:<serial>");
	// realtime paces a simulated device at wall-clock speed.
	Open func(ctx context.Context, id string, realtime bool) (lab.Device, error)
	// Create creates the session file at path and writes h.
	Create func(path string, h sessions.Header, overwrite bool) (Writer, error)
	// Resolve turns the experiment's devices, which may hold pool
	// selectors ("adb:model=Pixel 3"), into device IDs; nil takes them as
	// IDs.
	Resolve func(ctx context.Context, specs []string) ([]string, error)
}

// Plan is one session to run.
type Plan struct {
	// Experiment is what to run; its Device names the device.
	Experiment lab.Experiment
	// Tool is recorded in the header ("perflab 0.1.0").
	Tool string
	// Source says where the plan came from (the experiment file, or
	// "workbench"); recorded in the header.
	Source string
	// Path is the session file. Empty: Dir/ID.jsonl. Relative paths are
	// made absolute, so the path reported is usable from anywhere.
	Path string
	// Dir is where a session without Path goes (default DefaultDir()).
	Dir string
	// Overwrite replaces an existing Path; otherwise an existing file is an
	// error, unless FreeName.
	Overwrite bool
	// FreeName adds -2, -3... before the extension when Path is taken (two
	// workbench runs in one second).
	FreeName bool
	// ProbeS is the length, in device seconds, of the MFLOPS stability
	// check run after the controls are applied and before the first trial;
	// 0 skips it. A device that cannot probe gets a note in the session.
	ProbeS float64
	// Realtime paces a simulated device at wall-clock speed.
	Realtime bool
	// HandOffEvery is how often, at most, the events of fast trials on a
	// device that reports its trials' start (the local host) reach Events
	// (lab.Runner.SetHandOffEvery); 0: every 10 ms, for a live workbench.
	// Every event is in the file when it is made either way.
	HandOffEvery time.Duration
}

// Item is one relayed event, after it was written to the session, or a
// failure to record.
type Item struct {
	Event lab.Event // zero Type when the item only carries Err
	Err   error
}

// Session is a session being run. Read Events until it closes; then Result
// holds the outcome.
type Session struct {
	// Path is the session file (absolute).
	Path string
	// Header is the session's first line.
	Header sessions.Header
	// Device is the open device's description (a pool's first device).
	Device lab.DeviceInfo
	// Devices describes every device of a pool (nil for one device).
	Devices []lab.DeviceInfo
	// Runner takes live changes (order, controls, pause, notes).
	Runner Runner
	// Events carries every event after it was written, then closes once the
	// file and the device are closed.
	Events <-chan Item

	cancel context.CancelFunc
	done   chan struct{}
	result Result
}

// Result is how a session ended.
type Result struct {
	// Written counts the trials in the session file: only those whose line
	// was written without error.
	Written sessions.Counts
	// End is the runner's end event (nil if the runner stopped without one).
	End *lab.End
	// Err is the first failure to record (a write, sync or close error);
	// the run is stopped at the first one, as nothing more can be kept.
	Err error
}

// DefaultDir is where sessions go unless told: $XDG_DATA_HOME/perflab/sessions
// when XDG_DATA_HOME is absolute (the XDG spec ignores relative values),
// else ~/.local/share/perflab/sessions.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "perflab", "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for the default session folder (give a session path): %w", err)
	}
	return filepath.Join(home, ".local", "share", "perflab", "sessions"), nil
}

// Start opens the device, creates the session file with its header and
// starts the run. The caller reads s.Events to the end.
func Start(ctx context.Context, l Lab, p Plan) (*Session, error) {
	if l.Open == nil {
		return nil, errors.New("no device backend: cannot run trials")
	}
	if l.Create == nil {
		l.Create = createFile
	}
	exp := p.Experiment
	ids := exp.DeviceList()
	if l.Resolve != nil {
		var err error
		if ids, err = l.Resolve(ctx, ids); err != nil {
			return nil, err
		}
	}
	if len(exp.Devices) > 0 || len(ids) != 1 {
		return startPool(ctx, l, p, ids)
	}
	exp.Device = ids[0]
	dev, err := l.Open(ctx, exp.Device, p.Realtime)
	if err != nil {
		return nil, fmt.Errorf("open device %s: %w", exp.Device, err)
	}
	info := dev.Info()
	exp.Device = info.ID
	if err := checkDevices([]lab.Device{dev}, &exp); err != nil {
		dev.Close()
		return nil, err
	}
	hdr := sessions.NewHeader(p.Tool, info, &exp)
	hdr.Source = p.Source
	hdr.Host, _ = os.Hostname()
	path, err := sessionPath(p, hdr.ID)
	if err != nil {
		dev.Close()
		return nil, err
	}
	useSessionProxyFile(&exp, path)
	profileNote := checkProfiling(&exp, []lab.Device{dev})
	hdr.Plan = exp
	w, err := l.Create(path, hdr, p.Overwrite)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("create session %s: %w", path, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	rec := newRecorder(w, cancel, path, info.ID)
	if profileNote != "" {
		rec.write(profileOff(profileNote))
	}
	// Only a run with a stability check gets the probing wrapper, so the
	// runner sees the device itself otherwise (every interface it has).
	var samples chan Item // nil: no check; the relay never reads it
	rdev := dev
	if p.ProbeS > 0 {
		samples = make(chan Item) // unbuffered: see probingDevice
		probe := lab.ProbeOptions{DurationS: p.ProbeS, IntervalS: 1, Realtime: p.Realtime}
		rdev = withProbe(dev, probe, rec, samples)
	}
	r := lab.NewRunner(rdev, &exp)
	r.SetHandOffEvery(p.HandOffEvery)
	r.SetRecorder(rec.record)
	out := make(chan Item, 512)
	s := &Session{Path: path, Header: hdr, Device: info, Runner: r, Events: out, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(out)
		s.result = relay(rctx, cancel, dev.Close, r, rec, samples, out)
	}()
	return s, nil
}

// startPool is Start for a pool of devices (lab.Pool): it opens every
// device, records them all in the header (Devices; Device is the first)
// and runs the pool.
func startPool(ctx context.Context, l Lab, p Plan, ids []string) (*Session, error) {
	exp := p.Experiment
	if len(ids) == 0 {
		return nil, fmt.Errorf("no device matches %s", strings.Join(exp.DeviceList(), ", "))
	}
	if p.ProbeS > 0 {
		return nil, errors.New("the stability check (probe) runs on one device; run perflab check on each device of a pool instead")
	}
	if exp.Order == lab.OrderFixed {
		return nil, errors.New(`order "fixed" cannot run on a pool of devices: each device runs whole rounds of one A and one B (want alternate or random)`)
	}
	var devs []lab.Device
	closeAll := func() error { return (&lab.DeviceSet{Members: devs}).Close() } // the devices opened so far
	var infos []lab.DeviceInfo
	seen := map[string]bool{}
	for _, id := range ids {
		dev, err := l.Open(ctx, id, p.Realtime)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("open device %s: %w", id, err)
		}
		devs = append(devs, dev)
		info := dev.Info()
		if seen[info.ID] {
			closeAll()
			return nil, fmt.Errorf("device %s is in the pool twice", info.ID)
		}
		seen[info.ID] = true
		infos = append(infos, info)
	}
	exp.Device, exp.Devices = "", make([]string, len(infos))
	for i, info := range infos {
		exp.Devices[i] = info.ID
	}
	if err := checkDevices(devs, &exp); err != nil {
		closeAll()
		return nil, err
	}
	hdr := sessions.NewHeader(p.Tool, infos[0], &exp)
	hdr.Devices = infos
	hdr.Source = p.Source
	hdr.Host, _ = os.Hostname()
	path, err := sessionPath(p, hdr.ID)
	if err != nil {
		closeAll()
		return nil, err
	}
	useSessionProxyFile(&exp, path)
	profileNote := checkProfiling(&exp, devs)
	hdr.Plan = exp
	w, err := l.Create(path, hdr, p.Overwrite)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("create session %s: %w", path, err)
	}
	rctx, cancel := context.WithCancel(ctx)
	pool := lab.NewPool(devs, &exp)
	rec := newRecorder(w, cancel, path, infos[0].ID)
	if profileNote != "" {
		rec.write(profileOff(profileNote))
	}
	pool.SetRecorder(rec.record)
	out := make(chan Item, 512)
	s := &Session{Path: path, Header: hdr, Device: infos[0], Devices: infos, Runner: pool, Events: out, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(out)
		s.result = relay(rctx, cancel, closeAll, pool, rec, nil, out)
	}()
	return s, nil
}

func createFile(path string, h sessions.Header, overwrite bool) (Writer, error) {
	if overwrite {
		return sessions.CreateOverwrite(path, h)
	}
	return sessions.Create(path, h)
}

// checkProfiling turns exp's profiles off, with the reason, when a device
// cannot profile (no lab.Profiler, or its CanProfile says why not): the
// run goes on without them and the session says so.
func checkProfiling(exp *lab.Experiment, devs []lab.Device) string {
	if !exp.Profile {
		return ""
	}
	for _, d := range devs {
		p, ok := d.(lab.Profiler)
		if !ok {
			exp.Profile = false
			return fmt.Sprintf("this device (%T) cannot profile trials", d)
		}
		if ok, why := p.CanProfile(); !ok {
			exp.Profile = false
			return why
		}
	}
	return ""
}

// profileOff is the settings event that says profiles are off and why.
func profileOff(why string) lab.Event {
	return lab.Event{Type: lab.EventSettings, Settings: &lab.Settings{Detail: map[string]string{"profile": "off: " + why}}}
}

// sessionPath is the one place a session's file name is decided.
func sessionPath(p Plan, id string) (string, error) {
	path := p.Path
	if path == "" {
		dir := p.Dir
		if dir == "" {
			d, err := DefaultDir()
			if err != nil {
				return "", err
			}
			dir = d
		}
		path = filepath.Join(dir, id+".jsonl")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("session path %s: %w", path, err)
	}
	if p.FreeName && !p.Overwrite {
		abs = freeName(abs)
	}
	return abs, nil
}

// freeName returns path, or path with -2, -3... before its extension when
// a file of that name exists.
func freeName(path string) string {
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(path, ext)
	for i := 2; ; i++ {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			return path
		}
		path = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
}

// useSessionProxyFile puts the proxy recording next to the session file
// when the experiment records or replays and names no file.
func useSessionProxyFile(exp *lab.Experiment, sessionPath string) {
	if exp.Controls.Proxy != proxy.ModeRecord && exp.Controls.Proxy != proxy.ModeReplay {
		return
	}
	if exp.Proxy == nil {
		exp.Proxy = &lab.ProxyOptions{}
	} else {
		c := *exp.Proxy
		exp.Proxy = &c
	}
	if exp.Proxy.File == "" {
		exp.Proxy.File = proxy.DefaultFile(sessionPath)
	}
}

// Cancel stops the run: the trial in flight is ended and the session is
// closed with an end event.
func (s *Session) Cancel() { s.cancel() }

// Done is closed once the session file and the device are closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Wait waits until the session is closed and returns how it ended. The
// caller must be reading Events (or have read them to the end).
func (s *Session) Wait() Result {
	<-s.done
	return s.result
}

// RunSession starts a session, lets it run to its end without a view
// (its events are read and dropped) and returns the session file's path,
// or the first error (starting it, or recording it).
func RunSession(ctx context.Context, l Lab, p Plan) (string, error) {
	s, err := Start(ctx, l, p)
	if err != nil {
		return "", err
	}
	for range s.Events {
	}
	return s.Path, s.Wait().Err
}

// RunOn runs exp on an open device without recording it, folding every
// event: the runs of a study. A *lab.DeviceSet runs as a pool. The error
// says why the run did not complete (EndErr).
func RunOn(ctx context.Context, dev lab.Device, exp *lab.Experiment) (*Fold, error) {
	f := NewFold(exp)
	var end *lab.End
	var r interface {
		Run(context.Context) <-chan lab.Event
	} = lab.NewRunner(dev, exp)
	if set, ok := dev.(*lab.DeviceSet); ok {
		e := *exp
		e.Device, e.Devices = "", make([]string, len(set.Members))
		for i, m := range set.Members {
			e.Devices[i] = m.Info().ID
		}
		f = NewFold(&e)
		r = lab.NewPool(set.Members, &e)
	}
	for ev := range r.Run(ctx) {
		f.Add(ev)
		if ev.Type == lab.EventEnd && ev.End != nil {
			end = ev.End
		}
	}
	return f, EndErr(end)
}

// EndErr says why a run did not complete: nil when end says completed,
// context.Canceled when it was cancelled, an error naming the reason
// otherwise or when the run ended without an end event.
func EndErr(end *lab.End) error {
	switch {
	case end == nil:
		return errors.New("the run ended without an end event")
	case end.Reason == "completed":
		return nil
	case end.Reason == "cancelled":
		return context.Canceled
	case end.Error != "":
		return fmt.Errorf("%s: %s", end.Reason, end.Error)
	}
	return errors.New(end.Reason)
}
