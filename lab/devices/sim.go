package devices

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// openSim opens "sim:<preset>", a simulated phone (see lab/sim), or
// "sim:<preset>#<n>", its n-th instance (n ≥ 2): a phone of the same
// preset with an ID and a noise seed of its own, so a pool can hold several.
func openSim(ctx context.Context, arg string, opt Options) (lab.Device, error) {
	if arg == "" {
		return nil, fmt.Errorf("device \"sim\": name a preset, e.g. \"sim:pixel\" (presets: %v)", sim.PresetNames())
	}
	preset, inst, n := arg, "", 0
	if i := strings.IndexByte(arg, '#'); i >= 0 {
		preset, inst = arg[:i], arg[i+1:]
		v, err := strconv.Atoi(inst)
		if err != nil || v < 2 || v > 1000 {
			return nil, fmt.Errorf("device \"sim:%s\": instance %q: want a number from 2 to 1000 (sim:pixel#2)", arg, inst)
		}
		n = v
	}
	so := sim.Options{Seed: sim.InstanceSeed(opt.Seed, n), Realtime: opt.Realtime}
	d, err := sim.Open(preset, so)
	if err != nil {
		return nil, fmt.Errorf("device \"sim:%s\": %w", arg, err)
	}
	if n == 0 {
		return d, nil
	}
	return simInstance{d, "sim:" + arg}, nil
}

// simInstance is a numbered instance of a simulated phone: the same phone
// under its own ID.
type simInstance struct {
	*sim.Device
	id string
}

func (s simInstance) Info() lab.DeviceInfo {
	info := s.Device.Info()
	info.ID = s.id
	return info
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
