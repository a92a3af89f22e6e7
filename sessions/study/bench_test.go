package study

import (
	"context"
	"testing"
)

// BenchmarkValidateSim measures validation on the simulated phone: 20 A/A
// and 20 effect experiments of 50 trials per arm per iteration.
func BenchmarkValidateSim(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_, err := Validate(context.Background(), ValidateConfig{Experiment: feedExperiment(50, controlsOn()),
			Devices: simDevices("pixel"), AA: 20, EffectPct: 1, Inject: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
}
