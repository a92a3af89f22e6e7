// Package kernel is the MFLOPS probe's measuring loop with no dependency
// on the rest of perflab, so the standalone perflab-probe program built from
// it (and embedded for phones) changes only when the probe itself changes.
package kernel

import (
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
)

// Sample is one probe measurement; its JSON form is lab.ProbeSample's.
type Sample struct {
	T       float64 `json:"t"`
	MFLOPS  float64 `json:"mflops"`
	FreqKHz []int   `json:"freq_khz,omitempty"`
	TempC   float64 `json:"temp_c,omitempty"`
}

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
func Run(ctx context.Context, opt Options, out chan<- Sample) error {
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
		s := Sample{
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
func WriteSample(w io.Writer, s Sample) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
