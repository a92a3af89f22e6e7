package bisect

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
	"github.com/perflab/perflab/sessions/engine"
)

// SimRange returns n builds of the simulated app whose known effect grows
// by steps[i] % at build i (cumulatively, so build i carries the sum of
// the steps at or before it): a range with true steps at known places, to
// check a bisect against the truth.
func SimRange(app string, n int, steps map[int]float64) []Candidate {
	out := make([]Candidate, n)
	eff := 0.0
	for i := range out {
		eff += steps[i]
		e := math.Round(eff*1000) / 1000
		name := fmt.Sprintf("%s@%d", app, i)
		if e != 0 {
			name += fmt.Sprintf("%+g%%", e)
		}
		out[i] = Candidate{Name: name, Build: lab.Build{Name: name, App: app, EffectPct: e}}
	}
	return out
}

// SimLab opens simulated phones ("sim:<preset>") in this process, seeded by
// each session's experiment: the engine's way to the sim without the
// device registry.
func SimLab() engine.Lab {
	return engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
		preset, ok := strings.CutPrefix(id, "sim:")
		if !ok {
			return nil, fmt.Errorf("device %q: not a simulated phone (sim:<preset>)", id)
		}
		return sim.Open(preset, sim.Options{Realtime: realtime})
	}}
}

// SimTemplate is the experiment the sim tests and the accuracy bench use:
// sim:pixel with every control on, random order.
func SimTemplate(seed int64) lab.Experiment {
	return lab.Experiment{
		Device: "sim:pixel", Order: lab.OrderRandom, Warmup: 1, Seed: seed, Trials: DefaultMaxTrials,
		Alpha: lab.DefaultAlpha, Confidence: lab.DefaultConfidence, Metrics: []string{"startup_ms"},
		Controls: lab.Controls{Governor: json.RawMessage(`"recommended"`), RestoreSnapshot: true, KillApp: true, DismissDialogs: true,
			ClockReset: true, Proxy: "replay", Tmpfs: true, DropCaches: true},
	}
}
