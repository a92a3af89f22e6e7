package main

import (
	"context"
	"fmt"
	"io"
)

// cmdRun is not written yet.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}

// cmdReport is not written yet.
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}

// cmdReplay is not written yet.
func cmdReplay(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}
