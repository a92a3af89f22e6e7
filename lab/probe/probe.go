// Package probe is perflab's MFLOPS stability probe: a gonum matrix
// multiplication that keeps every core busy and reports the throughput of
// each sample interval, with the CPU frequencies and temperature read back
// from sysfs when the kernel exposes them. MobileLab used such a benchmark
// to find governor settings under which a phone neither drifts nor throttles.
//
// Run is the kernel; the standalone program in cmd/perflab-probe (which
// cross-builds for phones) prints the same samples as JSON lines.
package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/perflab/perflab/lab"
)

// Options configure a probe run.
type Options struct {
	Duration time.Duration // total; 0 means until ctx is cancelled
	Interval time.Duration // per sample; default 1 s
	Size     int           // matrix order; default 256
	// SysRoot prefixes the sysfs paths read for frequencies and temperature
	// ("" is the live /sys).
	SysRoot string
}

// DefaultSize is the default matrix order: big enough to be compute-bound,
// small enough for many multiplications per interval on a phone.
const DefaultSize = 256

// FlopsPerMul is the floating-point operation count of one n×n product.
func FlopsPerMul(n int) float64 { return 2 * float64(n) * float64(n) * float64(n) }

// Run multiplies matrices until the duration has elapsed or ctx is
// cancelled, sending one sample per interval to out. It does not close
// out. Cancellation ends it with ctx.Err().
func Run(ctx context.Context, opt Options, out chan<- lab.ProbeSample) error {
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.Size <= 0 {
		opt.Size = DefaultSize
	}
	n := opt.Size
	r := rand.New(rand.NewPCG(1, 2))
	fill := func() *mat.Dense {
		d := make([]float64, n*n)
		for i := range d {
			d[i] = r.Float64() - 0.5
		}
		return mat.NewDense(n, n, d)
	}
	a, b := fill(), fill()
	c := mat.NewDense(n, n, nil)
	sys := Sysfs{Root: opt.SysRoot}
	flops := FlopsPerMul(n)
	start := time.Now()
	for i := 1; ; i++ {
		if opt.Duration > 0 && time.Since(start) >= opt.Duration-opt.Interval/100 {
			return nil
		}
		begin := time.Now()
		end := start.Add(time.Duration(i) * opt.Interval)
		if opt.Duration > 0 && end.Sub(start) > opt.Duration {
			end = start.Add(opt.Duration)
		}
		muls := 0
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			c.Mul(a, b)
			muls++
			if !time.Now().Before(end) {
				break
			}
		}
		now := time.Now()
		s := lab.ProbeSample{
			T:       math.Round(now.Sub(start).Seconds()*1000) / 1000,
			MFLOPS:  math.Round(float64(muls)*flops/now.Sub(begin).Seconds()/1e6*10) / 10,
			FreqKHz: sys.CurrentKHz(),
			TempC:   sys.TempC(),
		}
		select {
		case out <- s:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Sysfs reads CPU frequencies and temperature from a sysfs tree.
type Sysfs struct{ Root string }

func (s Sysfs) path(p string) string {
	if s.Root == "" {
		return p
	}
	return filepath.Join(s.Root, p)
}

func (s Sysfs) readInt(p string) (int, bool) {
	b, err := os.ReadFile(s.path(p))
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return v, err == nil
}

// CurrentKHz returns scaling_cur_freq of each cpufreq policy (one per
// cluster), in policy order; nil when there is no cpufreq.
func (s Sysfs) CurrentKHz() []int {
	dirs, _ := filepath.Glob(s.path("/sys/devices/system/cpu/cpufreq/policy*"))
	sort.Slice(dirs, func(i, j int) bool { return policyNum(dirs[i]) < policyNum(dirs[j]) })
	var out []int
	for _, d := range dirs {
		rel := strings.TrimPrefix(d, s.Root)
		if v, ok := s.readInt(rel + "/scaling_cur_freq"); ok {
			out = append(out, v)
		}
	}
	return out
}

func policyNum(p string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "policy"))
	return n
}

// TempC returns the hottest thermal zone in °C, or 0 when none is readable.
func (s Sysfs) TempC() float64 {
	zones, _ := filepath.Glob(s.path("/sys/class/thermal/thermal_zone*/temp"))
	best := 0.0
	for _, z := range zones {
		v, ok := s.readInt(strings.TrimPrefix(z, s.Root))
		if !ok {
			continue
		}
		c := float64(v)
		if c > 1000 || c < -1000 { // millidegrees
			c /= 1000
		}
		if c > best && c < 150 {
			best = c
		}
	}
	return math.Round(best*10) / 10
}

// Describe says what the probe runs on, for logs and headers.
func Describe(size int) string {
	if size <= 0 {
		size = DefaultSize
	}
	return fmt.Sprintf("gonum %d×%d float64 matrix multiply, %d threads (GOMAXPROCS), %s/%s",
		size, size, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
}

// WriteSample writes s as one JSON line.
func WriteSample(w io.Writer, s lab.ProbeSample) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadSamples parses the probe program's output, one JSON sample per line,
// sending each to out; lines that are not samples are returned as errors
// naming the line.
func ReadSamples(ctx context.Context, r io.Reader, out chan<- lab.ProbeSample) error {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var s lab.ProbeSample
		var check struct {
			MFLOPS *float64 `json:"mflops"`
		}
		if err := json.Unmarshal([]byte(text), &check); err != nil || check.MFLOPS == nil {
			return fmt.Errorf("probe output line %d: not a sample: %q", line, clip(text))
		}
		if err := json.Unmarshal([]byte(text), &s); err != nil {
			return fmt.Errorf("probe output line %d: %v", line, err)
		}
		select {
		case out <- s:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return sc.Err()
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Local probes this host: Run with the live /sys.
type Local struct{}

// Probe runs the real probe on this machine.
func (Local) Probe(ctx context.Context, o lab.ProbeOptions, out chan<- lab.ProbeSample) error {
	return Run(ctx, Options{
		Duration: time.Duration(o.DurationS * float64(time.Second)),
		Interval: time.Duration(o.IntervalS * float64(time.Second)),
		Size:     o.Size,
	}, out)
}

var _ lab.Prober = Local{}
