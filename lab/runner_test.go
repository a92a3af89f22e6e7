package lab

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptDevice runs trials instantly: each arm's value is fixed, fail
// decides which trial indexes fail, and block, when set, holds every trial
// until it is closed or the context ends.
type scriptDevice struct {
	mu       sync.Mutex
	reqs     []TrialRequest
	fail     func(req TrialRequest) bool
	block    chan struct{}
	started  chan TrialRequest
	setupErr error
}

func (d *scriptDevice) Info() DeviceInfo { return DeviceInfo{ID: "script", Backend: "test"} }
func (d *scriptDevice) Setup(ctx context.Context, exp *Experiment) ([]Event, error) {
	return []Event{{Type: EventSettings, Settings: &Settings{Detail: map[string]string{"setup": "done"}}}}, d.setupErr
}
func (d *scriptDevice) Close() error { return nil }
func (d *scriptDevice) RunTrial(ctx context.Context, req TrialRequest) TrialResult {
	d.mu.Lock()
	d.reqs = append(d.reqs, req)
	d.mu.Unlock()
	if d.started != nil {
		d.started <- req
	}
	if d.block != nil {
		select {
		case <-d.block:
		case <-ctx.Done():
			return TrialResult{Status: StatusFailed, Reason: "killed"}
		}
	}
	if d.fail != nil && d.fail(req) {
		return TrialResult{Status: StatusFailed, Reason: "exit status 1"}
	}
	v := 10.0
	if req.Arm == ArmTreatment {
		v = 12
	}
	return TrialResult{Status: StatusOK, Metrics: []Metric{{Name: "wall_ms", Value: v, Unit: "ms"}}}
}

func testExp(order string, trials, warmup int) *Experiment {
	return &Experiment{Device: "script", Builds: map[string]Build{ArmControl: {}, ArmTreatment: {}},
		Trials: trials, Warmup: warmup, Order: order, Seed: 7, Alpha: 0.05, Confidence: 0.95}
}

func collect(ch <-chan Event) []Event {
	var evs []Event
	for e := range ch {
		evs = append(evs, e)
	}
	return evs
}

// armSeq returns the trials' arms as a string of A and B.
func armSeq(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Trial != nil {
			if e.Trial.Arm == ArmControl {
				b.WriteByte('A')
			} else {
				b.WriteByte('B')
			}
		}
	}
	return b.String()
}

func lastEnd(t *testing.T, evs []Event) *End {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].Type != EventEnd {
		t.Fatalf("last event is not end: %+v", evs)
	}
	return evs[len(evs)-1].End
}

func TestRunnerOrders(t *testing.T) {
	check := func(order string, want string) {
		t.Helper()
		evs := collect(NewRunner(&scriptDevice{}, testExp(order, 3, 1)).Run(context.Background()))
		if got := armSeq(evs); want != "" && got != want {
			t.Errorf("%s: order %s, want %s", order, got, want)
		}
		end := lastEnd(t, evs)
		if end.Reason != "completed" || end.Counts[StatusOK] != 8 || end.Counts["warmup"] != 2 {
			t.Errorf("%s: end %+v", order, end)
		}
		counted := map[string]int{}
		for _, e := range evs {
			if e.Trial != nil && e.Trial.Counted() {
				counted[e.Trial.Arm]++
			}
		}
		if counted[ArmControl] != 3 || counted[ArmTreatment] != 3 {
			t.Errorf("%s: counted %v", order, counted)
		}
	}
	check(OrderFixed, "AAAABBBB")
	check(OrderAlternate, "ABABABAB")
	check(OrderRandom, "")

	// Random: every round holds one of each, the sequence follows the seed.
	seq := func(seed int64) string {
		exp := testExp(OrderRandom, 30, 0)
		exp.Seed = seed
		return armSeq(collect(NewRunner(&scriptDevice{}, exp).Run(context.Background())))
	}
	a, b := seq(1), seq(1)
	if a != b {
		t.Errorf("same seed, different orders: %s vs %s", a, b)
	}
	if c := seq(2); c == a {
		t.Errorf("seeds 1 and 2 gave the same order %s", a)
	}
	for i := 0; i < len(a); i += 2 {
		if a[i] == a[i+1] {
			t.Fatalf("round %d is %s, want one of each arm", i/2, a[i:i+2])
		}
	}
	if strings.Count(a, "AB") == 0 || !strings.Contains(a, "BA") {
		t.Errorf("random order never varies: %s", a)
	}
}

func TestRunnerWarmupsFirstAndMarked(t *testing.T) {
	evs := collect(NewRunner(&scriptDevice{}, testExp(OrderAlternate, 2, 2)).Run(context.Background()))
	var flags []bool
	for _, e := range evs {
		if e.Trial != nil {
			flags = append(flags, e.Trial.Warmup)
		}
	}
	want := []bool{true, true, true, true, false, false, false, false}
	if len(flags) != len(want) {
		t.Fatalf("warm-up flags %v", flags)
	}
	for i := range want {
		if flags[i] != want[i] {
			t.Fatalf("warm-up flags %v, want %v", flags, want)
		}
	}
}

func TestRunnerFailuresAreRetriedNotCounted(t *testing.T) {
	dev := &scriptDevice{fail: func(r TrialRequest) bool { return r.Index == 2 || r.Index == 5 }}
	evs := collect(NewRunner(dev, testExp(OrderAlternate, 3, 0)).Run(context.Background()))
	end := lastEnd(t, evs)
	if end.Reason != "completed" || end.Counts[StatusFailed] != 2 || end.Counts[StatusOK] != 6 {
		t.Fatalf("end %+v", end)
	}
	for _, e := range evs {
		if e.Trial != nil && (e.Trial.Index == 2 || e.Trial.Index == 5) {
			if e.Trial.Status != StatusFailed || e.Trial.Reason != "exit status 1" || e.Trial.Counted() {
				t.Errorf("failed trial recorded as %+v", e.Trial)
			}
		}
	}
}

func TestRunnerStopsOnRepeatedFailure(t *testing.T) {
	dev := &scriptDevice{fail: func(r TrialRequest) bool { return r.Arm == ArmTreatment }}
	evs := collect(NewRunner(dev, testExp(OrderAlternate, 20, 0)).Run(context.Background()))
	end := lastEnd(t, evs)
	if end.Reason != "error" || !strings.Contains(end.Error, "treatment: 5 trials in a row failed; last: exit status 1") {
		t.Fatalf("end %+v", end)
	}
}

func TestRunnerSetupError(t *testing.T) {
	evs := collect(NewRunner(&scriptDevice{setupErr: errors.New("no such build")}, testExp(OrderFixed, 2, 0)).Run(context.Background()))
	end := lastEnd(t, evs)
	if end.Reason != "error" || !strings.Contains(end.Error, "no such build") {
		t.Fatalf("end %+v", end)
	}
	if armSeq(evs) != "" {
		t.Error("trials ran after a failed setup")
	}
}

func TestRunnerCancelEndsWithEvent(t *testing.T) {
	dev := &scriptDevice{block: make(chan struct{}), started: make(chan TrialRequest, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	ch := NewRunner(dev, testExp(OrderAlternate, 10, 0)).Run(ctx)
	<-dev.started
	cancel()
	evs := collect(ch)
	end := lastEnd(t, evs)
	if end.Reason != "cancelled" {
		t.Fatalf("end %+v", end)
	}
	for _, e := range evs {
		if e.Trial != nil && e.Trial.Counted() {
			t.Errorf("a cancelled trial counted: %+v", e.Trial)
		}
	}
}

func TestRunnerLiveControls(t *testing.T) {
	dev := &scriptDevice{block: make(chan struct{}), started: make(chan TrialRequest, 100)}
	r := NewRunner(dev, testExp(OrderAlternate, 4, 0))
	ch := r.Run(context.Background())
	var evs []Event
	done := make(chan struct{})
	go func() {
		evs = collect(ch)
		close(done)
	}()
	step := func() TrialRequest { // let one trial finish
		req := <-dev.started
		dev.block <- struct{}{}
		return req
	}
	step() // round 0, control
	if err := r.SetOrder("fixed"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetOrder("sideways"); err == nil {
		t.Error("SetOrder accepted a bad mode")
	}
	c := r.Controls()
	c.Prepare = []string{"sync"}
	if err := r.SetControls(c); err != nil {
		t.Fatal(err)
	}
	if err := r.AddNote("fan got loud"); err != nil {
		t.Fatal(err)
	}
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	if req := step(); req.Round != 0 || req.Arm != ArmTreatment || len(req.Controls.Prepare) != 0 {
		t.Errorf("the round in progress changed: %+v", req)
	}
	// Paused at the round boundary: no trial starts.
	select {
	case req := <-dev.started:
		t.Fatalf("trial %d started while paused", req.Index)
	case <-time.After(50 * time.Millisecond):
	}
	if !r.Paused() {
		t.Error("Paused() = false")
	}
	r.Resume()
	for i := 0; i < 6; i++ {
		req := step()
		if req.Round < 1 || len(req.Controls.Prepare) != 1 {
			t.Errorf("trial %d: new controls not in force: %+v", req.Index, req)
		}
	}
	<-done
	if got := armSeq(evs); got != "ABAAABBB" {
		t.Errorf("arms %s, want ABAAABBB (fixed from round 1)", got)
	}
	var toggles []string
	for _, e := range evs {
		switch {
		case e.Toggle != nil:
			toggles = append(toggles, e.Toggle.What+":"+e.Toggle.From+">"+e.Toggle.To+"@"+strconv.Itoa(e.Toggle.Round))
		case e.Note != nil:
			toggles = append(toggles, "note:"+e.Note.Text)
		case e.Trial != nil && e.Trial.Round >= 1 && e.Trial.Order != OrderFixed:
			t.Errorf("trial %d recorded order %s", e.Trial.Index, e.Trial.Order)
		}
	}
	want := []string{"order:alternate>fixed@1", `prepare:>["sync"]@1`, "note:fan got loud", "pause:running>paused@1", "resume:paused>running@1"}
	if strings.Join(toggles, "|") != strings.Join(want, "|") {
		t.Errorf("recorded\n %v\nwant\n %v", toggles, want)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].T < evs[i-1].T {
			t.Errorf("event %d goes back in time", i)
		}
	}
	if err := r.AddNote("late"); !errors.Is(err, ErrFinished) {
		t.Errorf("AddNote after the end: %v", err)
	}
}

// TestRunnerEventsStayOrderedUnderLoad: notes added from many goroutines
// while trials stream to a slow consumer all arrive, in time order, with
// the end event last.
func TestRunnerEventsStayOrderedUnderLoad(t *testing.T) {
	r := NewRunner(&scriptDevice{}, testExp(OrderRandom, 300, 0))
	ch := r.Run(context.Background())
	var wg sync.WaitGroup
	added := make(chan int, 1000)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if r.AddNote("n") == nil {
					added <- 1
				}
			}
		}()
	}
	var evs []Event
	for e := range ch {
		evs = append(evs, e)
		if len(evs)%50 == 0 {
			time.Sleep(time.Millisecond) // a consumer that lags now and then
		}
	}
	wg.Wait()
	close(added)
	want := 0
	for range added {
		want++
	}
	notes := 0
	for i, e := range evs {
		if e.Note != nil {
			notes++
		}
		if i > 0 && e.T < evs[i-1].T {
			t.Fatalf("event %d (%s) at %v after %v", i, e.Type, e.T, evs[i-1].T)
		}
	}
	if notes != want {
		t.Errorf("%d notes arrived, %d were accepted", notes, want)
	}
	if end := lastEnd(t, evs); end.Reason != "completed" || end.Counts[StatusOK] != 600 {
		t.Errorf("end %+v", end)
	}
}
