// Package study runs experiments about the experiment setup itself:
// MobileLab's validation framework (many A/A experiments and experiments
// with a known effect, to measure the false-positive rate and the power
// the statistics really have on this device) and OrderSage's
// order-dependence test (fixed-order against random-order runs).
//
// Both drive lab.Runner on devices opened through an Opener and report
// progress as a stream of Progress values, so the CLI and the TUI show the
// same thing.
package study

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// Opener opens a device for one run. seed tells independent experiments
// apart on simulated devices; real devices ignore it.
type Opener func(ctx context.Context, seed int64) (lab.Device, error)

// Devices says how a study gets its devices.
type Devices struct {
	// Open opens a device.
	Open Opener
	// Fresh opens a new device (with its own seed) for every run, so runs
	// are independent and may run in parallel: right for the simulated
	// phone. Otherwise one device is opened and every run uses it in turn,
	// the runner's Setup being the reset procedure between runs.
	Fresh bool
	// Parallel bounds concurrent runs when Fresh (default: GOMAXPROCS).
	Parallel int
	// SimTime says the devices run on simulated time (lab.CapSimTime):
	// cheap, and they know the truth, so a known effect can be injected.
	SimTime bool
}

// Progress is one step of a study, for progress bars and live panels.
type Progress struct {
	Study   string        `json:"study"`           // "validate" or "order"
	Phase   string        `json:"phase"`           // "aa", "effect", "fixed", "random"
	Index   int           `json:"index"`           // 0-based experiment (validate) or repetition (order) in its phase
	Done    int           `json:"done"`            // runs finished so far, all phases
	Total   int           `json:"total"`           // runs in the whole study
	Outcome string        `json:"outcome"`         // the run's verdict on the primary metric, or "failed"
	Error   string        `json:"error,omitempty"` // why the run failed
	Elapsed time.Duration `json:"elapsed_ns"`
	ETA     time.Duration `json:"eta_ns"`
}

// Fraction is Done/Total in [0, 1].
func (p Progress) Fraction() float64 {
	if p.Total == 0 {
		return 0
	}
	return min(1, float64(p.Done)/float64(p.Total))
}

// Update is one message of a study's stream: progress, or (last) the result
// or error.
type Update struct {
	Progress   *Progress
	Validation *Validation // set on the last update of ValidateStream
	Order      *Order      // set on the last update of OrderStream
	Err        error       // set on the last update when the study failed
}

// stream runs f in a goroutine and relays its progress and result on a
// channel that is closed after the last update.
func stream(ctx context.Context, f func(progress func(Progress)) Update) <-chan Update {
	out := make(chan Update, 8)
	go func() {
		defer close(out)
		last := f(func(p Progress) {
			select {
			case out <- Update{Progress: &p}:
			case <-ctx.Done():
			}
		})
		out <- last
	}()
	return out
}

// runSpec is one run to execute.
type runSpec struct {
	phase string
	index int
	seed  int64
	exp   *lab.Experiment
}

// runData is what a finished run yielded: counted trials in run order.
type runData struct {
	trials []lab.Trial
	failed int
	err    error
}

// values returns the metric's values for arm, in run order.
func (d *runData) values(arm, metric string) []float64 {
	var out []float64
	for _, t := range d.trials {
		if t.Arm != arm {
			continue
		}
		for _, m := range t.Metrics {
			if m.Name == metric {
				out = append(out, m.Value)
				break
			}
		}
	}
	return out
}

// input is the metric's analysis input; when every trial ran in alternate
// or random order its rounds are paired (analysis.PairRounds), as in run
// and report.
func (d *runData) input(metric string, info metricInfo) analysis.MetricInput {
	in := analysis.MetricInput{Name: metric, Unit: info.unit, Better: info.better,
		Samples: [][]float64{d.values(lab.ArmControl, metric), d.values(lab.ArmTreatment, metric)}}
	var rounds []analysis.Round
	index := map[int]int{}
	for _, t := range d.trials {
		if t.Order != lab.OrderAlternate && t.Order != lab.OrderRandom {
			return in
		}
		for _, m := range t.Metrics {
			if m.Name != metric {
				continue
			}
			k, ok := index[t.Round]
			if !ok {
				k = len(rounds)
				index[t.Round] = k
				rounds = append(rounds, analysis.Round{})
			}
			if t.Arm == lab.ArmControl {
				rounds[k].A = append(rounds[k].A, m.Value)
			} else {
				rounds[k].B = append(rounds[k].B, m.Value)
			}
			break
		}
	}
	in.Pairs, in.DroppedRounds = analysis.PairRounds(rounds)
	return in
}

// sequence returns the metric's values over both arms, in run order.
func (d *runData) sequence(metric string) []float64 {
	var out []float64
	for _, t := range d.trials {
		for _, m := range t.Metrics {
			if m.Name == metric {
				out = append(out, m.Value)
				break
			}
		}
	}
	return out
}

// metricInfo is a metric's unit and direction as trials report them.
type metricInfo struct{ unit, better string }

// metrics lists the metric names of the run's trials in first-seen order.
func (d *runData) metrics(into map[string]metricInfo, order *[]string) {
	for _, t := range d.trials {
		for _, m := range t.Metrics {
			if _, ok := into[m.Name]; !ok {
				b := m.Better
				if b == "" {
					b = "lower"
				}
				into[m.Name] = metricInfo{m.Unit, b}
				*order = append(*order, m.Name)
			}
		}
	}
}

// runOne executes one run on dev (through the session engine, unrecorded)
// and collects its counted trials.
func runOne(ctx context.Context, dev lab.Device, exp *lab.Experiment) *runData {
	f, err := engine.RunOn(ctx, dev, exp)
	d := &runData{err: err}
	if err != nil && !errors.Is(err, context.Canceled) {
		d.err = fmt.Errorf("run ended: %w", err)
	}
	for _, t := range f.Trials() {
		if t.Counted() {
			d.trials = append(d.trials, t)
		} else if t.Status != lab.StatusOK {
			d.failed++
		}
	}
	return d
}

// execute runs every spec and returns their data in spec order, calling
// done after each run. Fresh devices run in parallel; otherwise one device
// serves every run in turn.
func execute(ctx context.Context, devs Devices, specs []runSpec, done func(i int, d *runData)) error {
	results := make([]*runData, len(specs))
	var mu sync.Mutex
	finish := func(i int, d *runData) {
		mu.Lock()
		defer mu.Unlock()
		results[i] = d
		done(i, d)
	}
	if !devs.Fresh {
		dev, err := devs.Open(ctx, specs[0].seed)
		if err != nil {
			return err
		}
		defer dev.Close()
		for i, s := range specs {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			finish(i, runOne(ctx, dev, s.exp))
		}
		return ctx.Err()
	}
	par := devs.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				s := specs[i]
				dev, err := devs.Open(ctx, s.seed)
				if err != nil {
					finish(i, &runData{err: fmt.Errorf("opening device: %w", err)})
					continue
				}
				d := runOne(ctx, dev, s.exp)
				if err := dev.Close(); err != nil && d.err == nil {
					d.err = fmt.Errorf("closing device: %w", err)
				}
				finish(i, d)
			}
		}()
	}
	for i := range specs {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	return ctx.Err()
}

// seedFor derives a run's seed from the study seed, the phase and the
// index (SplitMix64), so every run is reproducible and distinct.
func seedFor(base int64, phase string, i int) int64 {
	x := uint64(base) ^ uint64(i+1)*0x9e3779b97f4a7c15
	for _, c := range phase {
		x = x*31 + uint64(c)
	}
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return int64(x>>1) | 1 // positive and non-zero
}

// clone copies an experiment deeply enough to change builds and order.
func clone(e *lab.Experiment) *lab.Experiment {
	c := *e
	c.Builds = map[string]lab.Build{}
	for k, b := range e.Builds {
		c.Builds[k] = b
	}
	return &c
}

// tracker computes elapsed time and ETA for progress.
type tracker struct {
	start time.Time
	total int
	done  int
}

func (t *tracker) step() (elapsed, eta time.Duration) {
	t.done++
	elapsed = time.Since(t.start)
	if t.done > 0 && t.done < t.total {
		eta = time.Duration(float64(elapsed) / float64(t.done) * float64(t.total-t.done))
	}
	return elapsed, eta
}

// pickMetric chooses the metric a study is about: the one asked for, else
// the experiment's first metric, else the first metric the trials report.
func pickMetric(want string, exp *lab.Experiment, seen []string) (string, error) {
	if want != "" {
		for _, m := range seen {
			if m == want {
				return want, nil
			}
		}
		s := append([]string(nil), seen...)
		sort.Strings(s)
		return "", fmt.Errorf("metric %q: no trial reported it (have: %v)", want, s)
	}
	for _, m := range exp.Metrics {
		for _, s := range seen {
			if s == m {
				return m, nil
			}
		}
	}
	if len(seen) == 0 {
		return "", errors.New("no trial reported any metric")
	}
	return seen[0], nil
}

// collect executes the specs and returns their data in spec order,
// reporting each finished run to progress with its verdict on the study's
// metric.
func collect(ctx context.Context, name string, devs Devices, specs []runSpec, exp *lab.Experiment, metric string,
	opt analysis.Options, progress func(Progress)) ([]*runData, error) {
	data := make([]*runData, len(specs))
	tr := tracker{start: time.Now(), total: len(specs)}
	picked := ""
	err := execute(ctx, devs, specs, func(i int, d *runData) {
		data[i] = d
		p := Progress{Study: name, Phase: specs[i].phase, Index: specs[i].index, Total: len(specs)}
		p.Elapsed, p.ETA = tr.step()
		p.Done = tr.done
		if d.err != nil {
			p.Outcome, p.Error = "failed", d.err.Error()
		} else {
			if picked == "" {
				var seen []string
				d.metrics(map[string]metricInfo{}, &seen)
				picked, _ = pickMetric(metric, exp, seen)
			}
			p.Outcome = verdictOf(d, picked, opt)
		}
		if progress != nil {
			progress(p)
		}
	})
	return data, err
}

// finished reports whether a run ran to its end (completed or failed on
// its own), as opposed to not started or cut short by cancellation.
func finished(d *runData) bool {
	return d != nil && !errors.Is(d.err, context.Canceled)
}

// finishedRuns counts the finished runs.
func finishedRuns(data []*runData) int {
	n := 0
	for _, d := range data {
		if finished(d) {
			n++
		}
	}
	return n
}
