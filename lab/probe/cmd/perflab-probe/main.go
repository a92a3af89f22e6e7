// Command perflab-probe is perflab's MFLOPS stability probe as a standalone
// program, for phones: it multiplies matrices on every core and prints one
// JSON sample per interval on stdout:
//
//	{"t":1.0,"mflops":8123.4,"freq_khz":[1766400,2803200],"temp_c":41.2}
//
// It is static and pure Go, so it cross-builds for Android:
//
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build ./lab/probe/cmd/perflab-probe
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab/probe/kernel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("perflab-probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dur := fs.Duration("duration", time.Minute, "how long to run (0 = until interrupted)")
	iv := fs.Duration("interval", time.Second, "sample interval")
	size := fs.Int("size", kernel.DefaultSize, "matrix order")
	info := fs.Bool("info", false, "print what would run and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: perflab-probe [-duration 60s] [-interval 1s] [-size %d]\n\n"+
			"Prints one JSON line per interval: t (s), mflops, freq_khz per cpufreq policy, temp_c.\n\n", kernel.DefaultSize)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *iv <= 0 || *dur < 0 || *size <= 0 {
		fmt.Fprintln(stderr, "perflab-probe: -interval and -size must be positive, -duration not negative")
		return 2
	}
	if *info {
		fmt.Fprintln(stdout, kernel.Describe(*size))
		return 0
	}
	out := make(chan kernel.Sample, 16)
	errc := make(chan error, 1)
	go func() {
		errc <- kernel.Run(ctx, kernel.Options{Duration: *dur, Interval: *iv, Size: *size}, out)
		close(out)
	}()
	for s := range out {
		if err := kernel.WriteSample(stdout, s); err != nil {
			fmt.Fprintln(stderr, "perflab-probe:", err)
			return 1
		}
	}
	if err := <-errc; err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "perflab-probe:", err)
		return 1
	}
	return 0
}
