package main

import (
	"context"
	"fmt"
	"io"
)

// cmdDevices is not written yet.
func cmdDevices(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}

// cmdCheck is not written yet.
func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}

// cmdTune is not written yet.
func cmdTune(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}
