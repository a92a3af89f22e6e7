package main

import (
	"context"
	"fmt"
	"io"
)

// cmdValidate is not written yet.
func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}

// cmdOrder is not written yet.
func cmdOrder(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}
