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
