package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// poolFake is a pool member that runs trials instantly with a value of
// its own (offset), and can go offline: lostAt names a trial (its count on
// this device, from 1) that reports Lost; back, when set, is where
// Reconnect waits (nil: the device is no Reconnector).
type poolFake struct {
	id     string
	offset float64
	lostAt int
	delay  time.Duration

	mu     sync.Mutex
	trials int
	rounds map[int]bool
}

func (d *poolFake) Info() DeviceInfo { return DeviceInfo{ID: d.id, Backend: "test"} }
func (d *poolFake) Setup(ctx context.Context, exp *Experiment) ([]Event, error) {
	return []Event{{Type: EventNote, Note: &Note{Text: "set up"}}}, nil
}
func (d *poolFake) Close() error { return nil }
func (d *poolFake) RunTrial(ctx context.Context, req TrialRequest) TrialResult {
	if d.delay > 0 {
		select {
		case <-time.After(d.delay):
		case <-ctx.Done():
			return TrialResult{Status: StatusFailed, Reason: "killed"}
		}
	}
	d.mu.Lock()
	d.trials++
	n := d.trials
	if d.rounds == nil {
		d.rounds = map[int]bool{}
	}
	d.rounds[req.Round] = true
	d.mu.Unlock()
	if n == d.lostAt {
		return TrialResult{Status: StatusFailed, Reason: "device offline", Lost: true}
	}
	v := 100 + d.offset
	if req.Arm == ArmTreatment {
		v *= 1.1
	}
	return TrialResult{Status: StatusOK, Metrics: []Metric{{Name: "wall_ms", Value: v, Unit: "ms"}}}
}

// reconnFake is a poolFake that comes back after a while.
type reconnFake struct {
	*poolFake
	back chan struct{}
}

func (d reconnFake) Reconnect(ctx context.Context) error {
	select {
	case <-d.back:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func poolTrials(evs []Event) []*Trial {
	var out []*Trial
	for _, e := range evs {
		if e.Type == EventTrial {
			out = append(out, e.Trial)
		}
	}
	return out
}

// pairsByRound checks the trials of a pool session: indexes run 0, 1, 2...,
// every trial names its device, no round is on two devices; it returns the
// complete counted rounds per device.
func pairsByRound(t *testing.T, evs []Event) map[string]int {
	t.Helper()
	type rnd struct {
		dev string
		ok  map[string]int
	}
	rounds := map[int]*rnd{}
	for i, tr := range poolTrials(evs) {
		if tr.Index != i {
			t.Fatalf("trial %d has index %d", i, tr.Index)
		}
		if tr.Device == "" {
			t.Fatalf("trial %d names no device", i)
		}
		r := rounds[tr.Round]
		if r == nil {
			r = &rnd{dev: tr.Device, ok: map[string]int{}}
			rounds[tr.Round] = r
		}
		if r.dev != tr.Device {
			t.Fatalf("round %d ran on %s and %s", tr.Round, r.dev, tr.Device)
		}
		if tr.Counted() {
			r.ok[tr.Arm]++
		}
	}
	out := map[string]int{}
	for _, r := range rounds {
		if r.ok[ArmControl] == 1 && r.ok[ArmTreatment] == 1 {
			out[r.dev]++
		}
	}
	return out
}

func TestPoolRunsThePlanOverAllDevices(t *testing.T) {
	devs := []*poolFake{{id: "a", delay: time.Millisecond}, {id: "b", offset: 10, delay: time.Millisecond}, {id: "c", offset: 20, delay: time.Millisecond}}
	var ds []Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	exp := testExp(OrderRandom, 30, 1)
	evs := collect(NewPool(ds, exp).Run(context.Background()))
	end := lastEnd(t, evs)
	if end.Reason != "completed" {
		t.Fatalf("end %+v", end)
	}
	per := pairsByRound(t, evs)
	total := 0
	for _, d := range devs {
		if per[d.id] == 0 {
			t.Errorf("device %s ran no counted round: %v", d.id, per)
		}
		total += per[d.id]
	}
	if total != 30 {
		t.Errorf("%d complete rounds, want the plan's 30: %v", total, per)
	}
	warm := 0
	for _, tr := range poolTrials(evs) {
		if tr.Warmup {
			warm++
		}
	}
	if warm != 2*len(devs) {
		t.Errorf("%d warm-up trials, want one round (2 trials) per device", warm)
	}
	notes := 0
	for _, e := range evs {
		if e.Type == EventNote && strings.HasSuffix(e.Note.Text, ": set up") {
			notes++
		}
	}
	if notes != 3 {
		t.Errorf("%d setup notes naming their device, want 3", notes)
	}
	checkStarts(t, evs)
}

func TestPoolLostDeviceRoundIsRedoneAndItRejoins(t *testing.T) {
	lost := &poolFake{id: "lost", lostAt: 3, delay: time.Millisecond}
	rc := reconnFake{lost, make(chan struct{})}
	other := &poolFake{id: "other", delay: time.Millisecond}
	exp := testExp(OrderAlternate, 20, 0)
	p := NewPool([]Device{rc, other}, exp)
	ch := p.Run(context.Background())
	var evs []Event
	sawLost := false
	for e := range ch {
		evs = append(evs, e)
		if e.Type == EventNote && strings.Contains(e.Note.Text, "lost offline") && !sawLost {
			sawLost = true
			// The other device goes on alone while this one is away.
			go func() {
				time.Sleep(20 * time.Millisecond)
				close(rc.back)
			}()
		}
	}
	if !sawLost {
		t.Fatal("no note says the device went offline")
	}
	if end := lastEnd(t, evs); end.Reason != "completed" {
		t.Fatalf("end %+v", end)
	}
	per := pairsByRound(t, evs)
	if per["lost"]+per["other"] != 20 {
		t.Errorf("complete rounds %v, want 20 in all (the lost round redone)", per)
	}
	var back bool
	for _, e := range evs {
		if e.Type == EventNote && e.Note.Text == "lost is back: it rejoins the pool" {
			back = true
		}
	}
	if !back {
		t.Error("no note says the device rejoined")
	}
	if got := deviceStates(evs, "lost"); got != "offline(device offline) back" {
		t.Errorf("lost's device events: %s", got)
	}
	if got := deviceStates(evs, "other"); got != "" {
		t.Errorf("other's device events: %s", got)
	}
	for _, e := range evs { // the pool's note says it once, not the device's runner again
		if e.Type == EventNote && strings.HasPrefix(e.Note.Text, "lost: device") {
			t.Errorf("the runner's note is forwarded too: %q", e.Note.Text)
		}
	}
	checkStarts(t, evs)
}

// deviceStates lists id's device events: "state(reason)" each.
func deviceStates(evs []Event, id string) string {
	var out []string
	for _, e := range evs {
		if e.Type == EventDevice && e.Device.Device == id {
			s := e.Device.State
			if e.Device.Reason != "" {
				s += "(" + e.Device.Reason + ")"
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// checkStarts checks that every trial of a pool session follows a start
// event of its device for its round and arm, and that each device starts
// one trial at a time.
func checkStarts(t *testing.T, evs []Event) {
	t.Helper()
	open := map[string]*TrialStart{}
	starts := 0
	for _, e := range evs {
		switch e.Type {
		case EventStart:
			starts++
			if o := open[e.Start.Device]; o != nil {
				t.Fatalf("%s starts round %d %s while round %d %s runs", e.Start.Device, e.Start.Round, e.Start.Arm, o.Round, o.Arm)
			}
			open[e.Start.Device] = e.Start
		case EventTrial:
			o := open[e.Trial.Device]
			if o == nil || o.Round != e.Trial.Round || o.Arm != e.Trial.Arm || o.Warmup != e.Trial.Warmup {
				t.Fatalf("trial %d (%s round %d %s) after start %+v", e.Trial.Index, e.Trial.Device, e.Trial.Round, e.Trial.Arm, o)
			}
			delete(open, e.Trial.Device)
		}
	}
	if n := len(poolTrials(evs)); starts != n {
		t.Errorf("%d start events for %d trials", starts, n)
	}
}

// setupFake is a poolFake whose setup reports the given governor.
type setupFake struct {
	*poolFake
	governor string
}

func (d setupFake) Setup(ctx context.Context, exp *Experiment) ([]Event, error) {
	return []Event{{Type: EventSettings, Settings: &Settings{Detail: map[string]string{"governor": d.governor}}}}, nil
}

// A pool records its settings once: its own (the devices' runners say
// nothing), each device's setup once when alike, and labelled by device
// where one differs.
func TestPoolSettingsOnce(t *testing.T) {
	devs := []Device{
		setupFake{&poolFake{id: "a"}, "performance"},
		setupFake{&poolFake{id: "b"}, "performance"},
		setupFake{&poolFake{id: "c"}, "powersave"},
	}
	evs := collect(NewPool(devs, testExp(OrderRandom, 6, 0)).Run(context.Background()))
	var got []string
	for _, e := range evs {
		if e.Type != EventSettings {
			continue
		}
		st := e.Settings
		switch {
		case st.Detail["devices"] != "":
			got = append(got, "pool "+st.Order+" "+st.Detail["devices"])
		case st.Detail["device"] != "":
			got = append(got, "runner "+st.Detail["device"])
		default:
			got = append(got, fmt.Sprintf("setup[%s] %s", st.Device, st.Detail["governor"]))
		}
	}
	// The first device to report is the pool's; which one varies.
	slices.Sort(got[1:])
	g := strings.Join(got, "|")
	if g != "pool random a,b,c|setup[] performance|setup[c] powersave" &&
		g != "pool random a,b,c|setup[] powersave|setup[a] performance|setup[b] performance" {
		t.Errorf("settings %s: want the pool's, the first setup unlabelled and the differing ones labelled", g)
	}
}

func TestPoolDeviceThatCannotReconnectLeaves(t *testing.T) {
	gone := &poolFake{id: "gone", lostAt: 1}
	stay := &poolFake{id: "stay", delay: 2 * time.Millisecond}
	evs := collect(NewPool([]Device{gone, stay}, testExp(OrderRandom, 15, 0)).Run(context.Background()))
	if end := lastEnd(t, evs); end.Reason != "completed" {
		t.Fatalf("end %+v", end)
	}
	per := pairsByRound(t, evs)
	if per["gone"] != 0 || per["stay"] != 15 {
		t.Errorf("complete rounds %v, want all 15 on the device that stayed", per)
	}
	var left bool
	for _, e := range evs {
		if e.Type == EventNote && strings.HasPrefix(e.Note.Text, "gone left the pool (device-lost") {
			left = true
		}
	}
	if !left {
		t.Error("no note says the device left the pool")
	}
	if got := deviceStates(evs, "gone"); !strings.HasPrefix(got, "offline(device offline) left(device-lost") {
		t.Errorf("gone's device events: %s", got)
	}
}

func TestPoolEveryDeviceGoneIsAnError(t *testing.T) {
	evs := collect(NewPool([]Device{&poolFake{id: "x", lostAt: 1}, &poolFake{id: "y", lostAt: 1}}, testExp(OrderRandom, 5, 0)).Run(context.Background()))
	end := lastEnd(t, evs)
	if end.Reason != "device-lost" || !strings.Contains(end.Error, "every device left the pool") {
		t.Fatalf("end %+v", end)
	}
}

func TestPoolLiveControls(t *testing.T) {
	d1, d2 := &poolFake{id: "a", delay: 2 * time.Millisecond}, &poolFake{id: "b", delay: 2 * time.Millisecond}
	p := NewPool([]Device{d1, d2}, testExp(OrderRandom, 10, 0))
	if err := p.SetOrder(OrderFixed); err == nil {
		t.Fatal("fixed order accepted on a pool")
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	ch := p.Run(context.Background())
	time.Sleep(20 * time.Millisecond)
	d1.mu.Lock()
	n := d1.trials
	d1.mu.Unlock()
	if n != 0 {
		t.Fatalf("a paused pool ran %d trials", n)
	}
	if err := p.SetOrder(OrderAlternate); err != nil {
		t.Fatal(err)
	}
	if err := p.AddNote("hello"); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	evs := collect(ch)
	toggles := 0
	for _, e := range evs {
		if e.Type == EventToggle {
			toggles++
			if e.Toggle.What == "order" && e.Toggle.Round != 0 {
				t.Errorf("order toggle at round %d, want 0 (nothing ran yet)", e.Toggle.Round)
			}
		}
	}
	if toggles != 3 { // pause, order, resume: once for the pool, not per device
		t.Errorf("%d toggles, want 3", toggles)
	}
	for _, tr := range poolTrials(evs) {
		if tr.Order != OrderAlternate {
			t.Fatalf("trial %d ran in order %s after the change", tr.Index, tr.Order)
		}
	}
	if err := p.AddNote("late"); !errors.Is(err, ErrFinished) {
		t.Errorf("note after the end: %v", err)
	}
}

func TestPoolAutoStopDecidesOverAllDevices(t *testing.T) {
	var ds []Device
	for i := range 4 {
		ds = append(ds, &poolFake{id: fmt.Sprint("d", i), offset: float64(i)})
	}
	exp := testExp(OrderRandom, 10, 0)
	exp.Stop, exp.MaxTrials = StopAuto, 500
	evs := collect(NewPool(ds, exp).Run(context.Background()))
	end := lastEnd(t, evs)
	if end.Reason != "completed" || !strings.HasPrefix(end.Stop, "decided after") {
		t.Fatalf("end %+v", end)
	}
	per := pairsByRound(t, evs)
	total := 0
	for _, n := range per {
		total += n
	}
	if total >= 500 {
		t.Errorf("ran %d rounds: a +10%% effect without noise should decide early", total)
	}
}

func TestPoolCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewPool([]Device{&poolFake{id: "a", delay: time.Millisecond}, &poolFake{id: "b", delay: time.Millisecond}}, testExp(OrderRandom, 100000, 0))
	ch := p.Run(ctx)
	var evs []Event
	for e := range ch {
		evs = append(evs, e)
		if len(evs) == 20 {
			cancel()
		}
	}
	if end := lastEnd(t, evs); end.Reason != "cancelled" {
		t.Fatalf("end %+v", end)
	}
}

// A device still away when the plan is met does not hold the run: its
// runner, waiting for it, is ended.
func TestPoolDoesNotWaitForALostDeviceAtTheEnd(t *testing.T) {
	lost := reconnFake{&poolFake{id: "lost", lostAt: 1}, make(chan struct{})} // never comes back
	done := make(chan []Event)
	go func() {
		done <- collect(NewPool([]Device{lost, &poolFake{id: "ok", delay: time.Millisecond}}, testExp(OrderRandom, 10, 0)).Run(context.Background()))
	}()
	select {
	case evs := <-done:
		if end := lastEnd(t, evs); end.Reason != "completed" {
			t.Fatalf("end %+v", end)
		}
		if per := pairsByRound(t, evs); per["ok"] != 10 {
			t.Errorf("complete rounds %v", per)
		}
	case <-time.After(time.Minute):
		t.Fatal("the pool waits for a device that never comes back")
	}
}

// virtFake is a pool member on a free virtual clock: each trial takes
// speed × (1 + noise) virtual seconds, noise from the seed Setup gets,
// and reports that time as its metric.
type virtFake struct {
	id    string
	speed float64

	mu    sync.Mutex
	rng   *rand.Rand
	clock time.Duration
}

func (d *virtFake) Info() DeviceInfo { return DeviceInfo{ID: d.id, Backend: "test"} }
func (d *virtFake) Setup(ctx context.Context, exp *Experiment) ([]Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rng = rand.New(rand.NewPCG(uint64(exp.Seed), 1))
	return nil, nil
}
func (d *virtFake) Close() error { return nil }
func (d *virtFake) VirtualTime() (time.Duration, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.clock, true
}
func (d *virtFake) RunTrial(ctx context.Context, req TrialRequest) TrialResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	sec := d.speed * (1 + 0.2*d.rng.Float64())
	d.clock += time.Duration(sec * float64(time.Second))
	return TrialResult{Status: StatusOK, Metrics: []Metric{{Name: "wall_ms", Value: 1000 * sec, Unit: "ms"}}}
}

// A pool of devices on free virtual clocks is a discrete-event schedule:
// the same seed gives the same trials on the same devices with the same
// results, and the next round goes to the device whose clock is earliest,
// so a device twice as fast runs about twice the rounds.
func TestVirtualPoolIsDeterministic(t *testing.T) {
	run := func() ([]string, map[string]int) {
		ds := []Device{&virtFake{id: "a", speed: 1}, &virtFake{id: "b", speed: 1}, &virtFake{id: "c", speed: 2}}
		exp := testExp(OrderRandom, 60, 1)
		exp.Seed = 7
		evs := collect(NewPool(ds, exp).Run(context.Background()))
		if end := lastEnd(t, evs); end.Reason != "completed" {
			t.Fatalf("end %+v", end)
		}
		var out []string
		for _, tr := range poolTrials(evs) {
			out = append(out, fmt.Sprintf("%d %s r%d %s %.9g", tr.Index, tr.Device, tr.Round, tr.Arm, tr.Metrics[0].Value))
		}
		return out, pairsByRound(t, evs)
	}
	first, per := run()
	for k := 0; k < 5; k++ {
		again, _ := run()
		if !slices.Equal(first, again) {
			t.Fatalf("run %d differs from the first:\n%s\n---\n%s", k+2, strings.Join(first, "\n"), strings.Join(again, "\n"))
		}
	}
	// a and b each get about 2/5 of the 60 rounds, c (half as fast) 1/5.
	if per["c"] < 9 || per["c"] > 15 || per["a"] < 20 || per["b"] < 20 {
		t.Errorf("rounds per device %v: want about a 24, b 24, c 12 (earliest clock first)", per)
	}
}

// A pool with any device not on a free virtual clock keeps "first free
// gets the round": a real device is never held for a simulated one.
func TestPoolWithARealDeviceIsNotVirtual(t *testing.T) {
	ds := []Device{&virtFake{id: "a", speed: 1}, &poolFake{id: "b"}}
	if NewPool(ds, testExp(OrderRandom, 4, 0)).virtual {
		t.Error("a pool with a device that has no virtual clock runs as a discrete-event schedule")
	}
	if !NewPool(ds[:1], testExp(OrderRandom, 4, 0)).virtual {
		t.Error("a pool of virtual-clock devices is not a discrete-event schedule")
	}
}
