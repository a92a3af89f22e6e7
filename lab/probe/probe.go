// Package probe is perflab's MFLOPS stability probe: a gonum matrix
// multiplication that keeps every core busy and reports the throughput of
// each sample interval, with the CPU frequencies and temperature read back
// from sysfs when the kernel exposes them. MobileLab used such a benchmark
// to find governor settings under which a phone neither drifts nor throttles.
//
// The measuring loop is in package kernel, which depends on nothing else of
// perflab; the standalone program in cmd/perflab-probe (which cross-builds
// for phones) is built from it alone and prints the same samples as JSON lines.
package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/probe/kernel"
)

// Options configure a probe run.
type Options = kernel.Options

// DefaultSize is the default matrix order.
const DefaultSize = kernel.DefaultSize

// Sysfs reads CPU frequencies and temperature from a sysfs tree.
type Sysfs = kernel.Sysfs

// FlopsPerMul is the floating-point operation count of one n×n product.
func FlopsPerMul(n int) float64 { return kernel.FlopsPerMul(n) }

// Describe says what the probe runs on, for logs and headers.
func Describe(size int) string { return kernel.Describe(size) }

// Run multiplies matrices until the duration has elapsed or ctx is
// cancelled, sending one sample per interval to out. It does not close
// out. Cancellation ends it with ctx.Err().
func Run(ctx context.Context, opt Options, out chan<- lab.ProbeSample) error {
	ks := make(chan kernel.Sample)
	errc := make(chan error, 1)
	go func() {
		errc <- kernel.Run(ctx, opt, ks)
		close(ks)
	}()
	for s := range ks {
		select {
		case out <- lab.ProbeSample(s):
		case <-ctx.Done():
			for range ks {
			}
			<-errc
			return ctx.Err()
		}
	}
	return <-errc
}

// WriteSample writes s as one JSON line.
func WriteSample(w io.Writer, s lab.ProbeSample) error {
	return kernel.WriteSample(w, kernel.Sample(s))
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
