package main

import (
	"context"
	"fmt"
	"io"
)

// cmdTUI is not written yet.
func cmdTUI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}

// openRunTUI opens the workbench on an experiment file (perflab run without --headless).
func openRunTUI(ctx context.Context, expPath string, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: the workbench is not built yet; use --headless")
	return 1
}

// openReplayTUI opens a saved session in the workbench (perflab replay without --headless).
func openReplayTUI(ctx context.Context, sessionPath string, speed float64, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: the workbench is not built yet; use --headless")
	return 1
}
