package main

import (
	"context"
	"fmt"
	"io"
)

// cmdSimdevice is not written yet.
func cmdSimdevice(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "perflab: this command is not built yet")
	return 1
}
