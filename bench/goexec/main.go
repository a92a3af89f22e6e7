// Command goexec runs a command N times, one after another, with os/exec
// in a process group of its own with Pdeathsig, the goroutine locked to
// its thread until the command is waited for (as perflab's local device
// did before it started trials with syscall.ForkExec), and nothing else:
// no reset, no capture, no session. bench/run_overhead.sh times it beside
// perflab and hyperfine, so perflab's own cost per trial is told apart
// from what starting a process costs a Go program on the host.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

func main() {
	runs := flag.Int("runs", 1000, "how many times to run the command")
	childrenCPU := flag.Bool("children-cpu", false, "print the CPU time (user + sys, seconds) the command's runs took, as wait4 reports it, on stdout at the end")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: goexec [--runs N] COMMAND [ARG...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goexec:", err)
		os.Exit(1)
	}
	var cpu time.Duration
	for range *runs {
		ru, err := run(flag.Args(), devnull)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goexec:", err)
			os.Exit(1)
		}
		cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if *childrenCPU {
		fmt.Printf("%.6f\n", cpu.Seconds())
	}
}

// run runs argv once and returns its resource usage.
func run(argv []string, devnull *os.File) (*syscall.Rusage, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	return cmd.ProcessState.SysUsage().(*syscall.Rusage), nil
}
