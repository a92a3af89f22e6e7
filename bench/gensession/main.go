// Command gensession writes a synthetic perflab session with many trials,
// for benchmarking `perflab report` against benchstat on the same data.
//
//	go run ./bench/gensession -trials 100000 -out /tmp/big.jsonl
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/perflab/perflab/internal/gensession"
)

func main() {
	trials := flag.Int("trials", 100000, "trials in total (half per arm)")
	out := flag.String("out", "", "session file to write")
	effect := flag.Float64("effect", 0.01, "treatment's relative slowdown (0.01 = 1%)")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gensession: -out is required")
		os.Exit(2)
	}
	if err := gensession.Write(*out, *trials, *effect, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gensession:", err)
		os.Exit(1)
	}
}
