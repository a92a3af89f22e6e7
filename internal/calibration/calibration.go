// Package calibration sizes the statistical studies that tests run. By
// default a test runs a small seeded version of its study: seconds under
// the race detector, deterministic, and still failing when the statistics
// go wrong. With PERFLAB_CALIBRATION=1 (bench/calibration.sh) the same
// test runs the full study of thousands of runs whose figures the manual
// (docs/, see docs/figures.md) quotes.
package calibration

import (
	"os"
	"testing"
)

// Env is the environment variable that selects the full studies.
const Env = "PERFLAB_CALIBRATION"

// Full reports whether the full studies run (Env is "1").
func Full() bool { return os.Getenv(Env) == "1" }

// Size is full when the full studies run, small otherwise: a number of
// runs, or a tolerance that the smaller study needs wider.
func Size[T int | float64](small, full T) T {
	if Full() {
		return full
	}
	return small
}

// Only skips a test that exists only as a full study.
func Only(t testing.TB) {
	t.Helper()
	if !Full() {
		t.Skip("a calibration study: run it with bench/calibration.sh (" + Env + "=1)")
	}
}
