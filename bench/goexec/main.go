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
)

func main() {
	runs := flag.Int("runs", 1000, "how many times to run the command")
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
	for range *runs {
		if err := run(flag.Args(), devnull); err != nil {
			fmt.Fprintln(os.Stderr, "goexec:", err)
			os.Exit(1)
		}
	}
}

func run(argv []string, devnull *os.File) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Run()
}
