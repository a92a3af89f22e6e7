package sim

import "testing"

// TestSeedsUnchanged pins every derivation of a simulated phone's noise
// seed, and the first draws of the generator each seed starts: a session
// rerun with the seed its header records must draw the noise it drew when
// it was made. A change here changes every simulated result.
func TestSeedsUnchanged(t *testing.T) {
	noise := []struct {
		seed        int64
		first, next uint64
	}{
		{0, 0xffceeb103eedc548, 0xef9f66595293ff5d},
		{1, 0x7307ebe35c7c36ae, 0x5bdd359f9ec24b96},
		{42, 0x83efcb93afdfd455, 0x7ed50bbb0af1d58c},
		{-7, 0xb4a7af7d2aa3cd34, 0x3d2bcac431ffa63d},
		{1000045, 0x1d74136284f3ba0, 0xeeb8949972543111},
	}
	for _, c := range noise {
		for name, r := range map[string]interface{ Uint64() uint64 }{
			"newNoise": newNoise(c.seed),
			"NewPhone": NewPhone(Presets()[0], c.seed).rng,
			"Reseed":   reseeded(c.seed).rng,
		} {
			if a, b := r.Uint64(), r.Uint64(); a != c.first || b != c.next {
				t.Errorf("%s(%d) draws %#x %#x, want %#x %#x", name, c.seed, a, b, c.first, c.next)
			}
		}
	}
	derived := []struct {
		name      string
		got, want int64
	}{
		{"NoiseSeed(own 0, exp 9)", NoiseSeed(0, 9), 9},
		{"NoiseSeed(own 3, exp 9)", NoiseSeed(3, 9), 3},
		{"InstanceSeed(42, 0)", InstanceSeed(42, 0), 42},
		{"InstanceSeed(42, 2)", InstanceSeed(42, 2), 1000045},
		{"InstanceSeed(42, 3)", InstanceSeed(42, 3), 2000048},
		{"InstanceSeed(-5, 1000)", InstanceSeed(-5, 1000), -5 + 999*1_000_003},
		{"UnitSeed(5, 0)", UnitSeed(5, 0), 5},
		{"UnitSeed(5, 3)", UnitSeed(5, 3), 8},
	}
	for _, c := range derived {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func reseeded(seed int64) *Phone {
	ph := NewPhone(Presets()[0], 99)
	ph.Reseed(seed)
	return ph
}
