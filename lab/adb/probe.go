package adb

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/probebin"
	"github.com/perflab/perflab/lab/probe"
)

// ProbePath is where the probe is pushed on the phone.
const ProbePath = TmpDir + "/perflab-probe"

// abis returns the phone's ABIs, best first.
func (d *Device) abis(ctx context.Context) ([]string, error) {
	out, err := d.c.Run(ctx, d.serial, "getprop ro.product.cpu.abilist; getprop ro.product.cpu.abi")
	if err != nil {
		return nil, err
	}
	var abis []string
	for _, l := range strings.Split(out, "\n") {
		for _, a := range strings.Split(strings.TrimSpace(l), ",") {
			if a != "" {
				abis = append(abis, a)
			}
		}
	}
	return abis, nil
}

// Probe implements lab.Prober: it pushes the perflab-probe build for the
// phone's ABI and streams its samples. The run has no time limit but ctx
// and o.DurationS; output is read as it arrives.
func (d *Device) Probe(ctx context.Context, o lab.ProbeOptions, out chan<- lab.ProbeSample) error {
	abis, err := d.abis(ctx)
	if err != nil {
		return err
	}
	tg, err := probebin.ForABIs(abis)
	if err != nil {
		return err
	}
	if err := d.c.Push(ctx, d.serial, bytes.NewReader(tg.Binary), ProbePath, 0o755, time.Now()); err != nil {
		return fmt.Errorf("pushing the probe: %w", err)
	}
	args := []string{ProbePath, "-duration", fmtDur(o.DurationS), "-interval", fmtDur(o.IntervalS)}
	if o.Size > 0 {
		args = append(args, "-size", fmt.Sprint(o.Size))
	}
	if o.IntervalS <= 0 {
		args[4] = "1s"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	var stderr lockedBuffer
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := d.c.Shell(ctx, d.serial, strings.Join(args, " "), nil, pw, &stderr)
		pw.Close()
		done <- result{code, err}
	}()
	rerr := probe.ReadSamples(ctx, pr, out)
	if rerr != nil {
		cancel()
		pr.Close()
	}
	res := <-done
	switch {
	case rerr != nil && ctx.Err() == nil:
		return rerr
	case res.err != nil:
		return res.err
	case res.code != 0:
		return fmt.Errorf("perflab-probe (%s) on %s: exit status %d: %s", tg.ABI, d.serial, res.code, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func fmtDur(s float64) string {
	if s <= 0 {
		return "0s"
	}
	return (time.Duration(s * float64(time.Second))).String()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
