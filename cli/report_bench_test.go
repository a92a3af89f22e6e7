package cli

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/perflab/perflab/internal/gensession"
)

// BenchmarkReport100k runs `perflab report` on bench/report_vs_benchstat.sh's
// session (100,000 trials, 3 metrics, +1% effect): reading, the order
// effects, the analysis and the table.
func BenchmarkReport100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.jsonl")
	if err := gensession.Write(path, 100000, 0.01, 1); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if code := cmdReport(context.Background(), []string{path}, io.Discard, io.Discard); code != exitRegression {
			b.Fatalf("exit %d, want %d (the treatment is 1%% slower)", code, exitRegression)
		}
	}
}
