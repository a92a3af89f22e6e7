// Command perflab is an interactive workbench for telling, with statistics
// you can trust, whether build B is slower than build A on a phone, this
// Linux host, or a built-in simulated phone.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/perflab/perflab/cli"
)

func main() {
	// SIGHUP (the workbench's terminal closed) ends a run like Ctrl-C: the
	// trial in flight is stopped and the session file is closed with an end
	// event.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
