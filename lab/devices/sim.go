package devices

import (
	"context"
	"fmt"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// openSim opens "sim:<preset>", a simulated phone (see lab/sim).
func openSim(ctx context.Context, arg string, opt Options) (lab.Device, error) {
	if arg == "" {
		return nil, fmt.Errorf("device \"sim\": name a preset, e.g. \"sim:pixel\" (presets: %v)", sim.PresetNames())
	}
	d, err := sim.Open(arg, sim.Options{Seed: opt.Seed, Realtime: opt.Realtime})
	if err != nil {
		return nil, fmt.Errorf("device \"sim:%s\": %w", arg, err)
	}
	return d, nil
}

func listSim(ctx context.Context, opt Options) ([]lab.DeviceInfo, error) {
	var out []lab.DeviceInfo
	for _, p := range sim.Presets() {
		out = append(out, sim.InfoFor(p))
	}
	return out, nil
}

func staticSim(arg string) (lab.DeviceInfo, bool) {
	p, err := sim.Lookup(arg)
	if err != nil {
		return lab.DeviceInfo{}, false
	}
	return sim.InfoFor(p), true
}
