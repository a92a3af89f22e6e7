// Command perflab is an interactive workbench for telling, with statistics
// you can trust, whether build B is slower than build A on a phone, this
// Linux host, or a built-in simulated phone.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/perflab/perflab/cli"
)

func main() {
	// SIGHUP (the workbench's terminal closed) ends a run like Ctrl-C: the
	// trial in flight is stopped and the session file is closed with an end
	// event.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE) // before anything is written
	go endOnClosedOutput(pipe, cancel)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	stop()
	os.Exit(code)
}

// endOnClosedOutput ends the command like Ctrl-C when its standard output
// or error is a pipe whose reader has gone (perflab suite | head): the
// kernel's SIGPIPE would otherwise kill perflab mid-trial, leaving a
// suite's worktrees, a phone's settings and the session without its end.
// Once perflab asks for SIGPIPE, every broken pipe or socket raises it
// (an ssh worker's, a phone's adb connection): only a closed output
// (poll says POLLERR or POLLHUP on fd 1 or 2) ends the command; the rest
// fail their writes with EPIPE as before. sig receives SIGPIPE, asked for
// until perflab exits: were it let go, the cleanup's next message on the
// closed output would kill perflab.
func endOnClosedOutput(sig <-chan os.Signal, cancel context.CancelFunc) {
	for range sig {
		fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			for _, f := range fds {
				if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
					cancel()
				}
			}
		}
	}
}
