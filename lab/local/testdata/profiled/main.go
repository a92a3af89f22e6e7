// Command profiled is the real program of the local profile tests: two
// phases ("load", then "draw"), each calling one function that does pure
// CPU work; -more P makes drawRows do P% more (by default the P a build
// sets with -ldflags "-X main.morePct=P", for two builds of one source). It reports its phases as
// PERFLAB_SPAN lines (CLOCK_MONOTONIC), and with $PERFLAB_CPUPROFILE set it
// writes its own Go CPU profile there, each phase as a pprof label.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"

	"golang.org/x/sys/unix"
)

var sink float64

// morePct is -more's default, set at build time.
var morePct = "0"

//go:noinline
func parseItems(n int) {
	x := 0.0
	for i := range n {
		x += float64(i%7) * 0.5
	}
	sink += x
}

//go:noinline
func drawRows(n int) {
	x := 0.0
	for i := range n {
		x += float64(i%5) * 0.25
	}
	sink += x
}

func now() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func phase(name string, f func()) {
	fmt.Printf("PERFLAB_SPAN begin %s %d\n", name, now())
	pprof.Do(context.Background(), pprof.Labels("phase", name), func(context.Context) { f() })
	fmt.Printf("PERFLAB_SPAN end %s %d\n", name, now())
}

func main() {
	def, err := strconv.ParseFloat(morePct, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "main.morePct:", err)
		os.Exit(2)
	}
	more := flag.Float64("more", def, "% more work in drawRows")
	n := flag.Int("n", 60_000_000, "iterations of each function")
	flag.Parse()
	if path := os.Getenv("PERFLAB_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	phase("load", func() { parseItems(*n) })
	phase("draw", func() { drawRows(int(float64(*n) * (1 + *more/100))) })
}
