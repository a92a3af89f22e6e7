package lab

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Upper bounds of the numeric fields of an experiment and of the commands'
// flags. Values beyond them are typos rather than plans, and the largest
// would overflow: trials near 2^63 overflow every count and progress bar, a
// trial_timeout over ~292 years does not fit a time.Duration. Checking at
// load time means such values never reach a runner, a progress bar or an
// ETA.
const (
	MaxTrials        = 100000 // trials per arm
	MaxWarmup        = 10000  // warm-up rounds
	MaxTrialTimeoutS = 604800 // trial_timeout, seconds (7 days)
	MaxCPU           = 8191   // controls.pin_cpu (the kernel's largest NR_CPUS)
	MaxEffectPct     = 1000.0 // builds.*.effect_pct and --effect, %
	MinEffectPct     = -100.0 // exclusive: -100% would make the work free
	MaxStudyRuns     = 100000 // validate --aa / --effect-runs (K), order --runs (N)
	MaxProbeSize     = 4096   // check --size, the probe's matrix order
	MaxTuneSteps     = 64     // tune --steps per cluster
	MaxParallel      = 1024   // study --parallel
	MaxReplaySpeed   = 1e6    // replay --speed
)

// MaxDuration bounds the time flags (check/tune --duration, --interval,
// --cooldown): a day.
const MaxDuration = 24 * time.Hour

// ErrTooLarge and ErrTooSmall are wrapped by the errors of values outside
// their bounds.
var (
	ErrTooLarge = errors.New("too large")
	ErrTooSmall = errors.New("too small")
)

// CheckRange returns an error naming field when v is outside [lo, hi],
// e.g. "trials: 9223372036854775807 is too large (max 100000)".
func CheckRange[T int | int64 | float64](field string, v, lo, hi T) error {
	if f, ok := any(v).(float64); ok && math.IsNaN(f) {
		return fmt.Errorf("%s: NaN is not a number", field)
	}
	switch {
	case v > hi:
		return fmt.Errorf("%s: %v is %w (max %v)", field, v, ErrTooLarge, hi)
	case v < lo:
		return fmt.Errorf("%s: %v is %w (min %v)", field, v, ErrTooSmall, lo)
	}
	return nil
}

// CheckDuration returns an error naming flag when d is negative or above
// MaxDuration.
func CheckDuration(flag string, d time.Duration) error {
	switch {
	case d > MaxDuration:
		return fmt.Errorf("%s: %v is %w (max %v)", flag, d, ErrTooLarge, MaxDuration)
	case d < 0:
		return fmt.Errorf("%s: %v is %w (min 0s)", flag, d, ErrTooSmall)
	}
	return nil
}
