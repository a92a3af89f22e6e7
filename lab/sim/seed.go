package sim

import (
	"math/rand/v2"

	"github.com/perflab/perflab/lab"
)

// The noise seeds of simulated phones are derived here and nowhere else: a
// session's header records one seed, and a rerun with that seed must draw
// the same noise on the same devices, so every derivation from it (the
// experiment's, an instance's, a fleet unit's) has this one home.

// NoiseSeed is the seed a simulated phone's noise takes for a session: the
// phone's own seed (Options.Seed: an instance's, a fleet unit's, a study
// run's) when it has one, else the experiment's.
func NoiseSeed(own, experiment int64) int64 {
	if own != 0 {
		return own
	}
	return experiment
}

// InstanceSeed is the own seed of instance n (2, 3, ...) of a simulated
// phone, sim:PRESET#n, opened with seed: that of the pool's member n−1
// (lab.MemberSeed), so the instances of a pool differ as its members do.
// n below 2 is the phone itself, with seed.
func InstanceSeed(seed int64, n int) int64 {
	if n < 2 {
		return seed
	}
	return lab.MemberSeed(seed, n-1)
}

// UnitSeed is the seed of phone i (from 0) of a fleet of simulated adb
// phones (perflab simdevice --count) whose first phone has seed base.
func UnitSeed(base int64, i int) int64 { return base + int64(i) }

// newNoise is the noise generator of a phone with seed.
func newNoise(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x5eed51a1))
}
