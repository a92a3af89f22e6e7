package study

import (
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

func TestNewValidateConfigDefaults(t *testing.T) {
	for _, tt := range []struct {
		device     string
		aa         int
		effect     float64
		given      bool
		wantAA     int
		wantEffect float64
		wantInject bool
	}{
		{"sim:pixel", 0, 0, false, DefaultAASim, DefaultEffectSim, true},
		{"sim:pixel", 7, 0, true, 7, 0, true}, // --effect 0: no effect experiments
		{"adb:R58M", 0, 5, true, DefaultAAReal, 5, false},
		{"local", 3, 0, false, 3, 0, false},
	} {
		devs := Devices{SimTime: strings.HasPrefix(tt.device, "sim:")} // as a sim_time device
		cfg := NewValidateConfig(&lab.Experiment{Device: tt.device}, devs, tt.aa, tt.effect, tt.given)
		if cfg.AA != tt.wantAA || cfg.EffectPct != tt.wantEffect || cfg.Inject != tt.wantInject {
			t.Errorf("%s aa=%d effect=%g given=%v: AA %d effect %g inject %v", tt.device, tt.aa, tt.effect, tt.given, cfg.AA, cfg.EffectPct, cfg.Inject)
		}
	}
}
