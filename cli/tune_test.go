package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/sim"
)

func TestTuneRecommendsBelowThrottlingAndSaves(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	for _, p := range sim.Presets() {
		code, out, errOut := simCmd(t, "tune", "sim:"+p.Name, "--json")
		if code != 0 {
			t.Fatalf("tune %s: exit %d\n%s", p.Name, code, errOut)
		}
		if !regexp.MustCompile(`(?m)^\[ *1/\d+\] unstable`).MatchString(errOut) || !strings.Contains(errOut, "saved ") {
			t.Errorf("tune %s: no progress or save message on stderr:\n%s", p.Name, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var res struct {
			Recommended *lab.GovernorProfile `json:"recommended"`
			Candidates  []struct {
				Profile lab.GovernorProfile `json:"profile"`
				Summary struct {
					Verdict    string  `json:"verdict"`
					MeanMFLOPS float64 `json:"mean_mflops"`
				} `json:"summary"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.Recommended == nil {
			t.Fatalf("tune %s --json last line: %v\n%s", p.Name, err, lines[len(lines)-1])
		}
		if res.Candidates[0].Profile.Name != "stock" || res.Candidates[0].Summary.Verdict != "unstable" {
			t.Errorf("%s: stock candidate %+v should come first and be unstable", p.Name, res.Candidates[0])
		}
		var freqs []int
		for _, c := range res.Recommended.Clusters {
			freqs = append(freqs, c.MaxKHz)
		}
		if st := p.SteadyTempC(freqs, res.Recommended.GPU.MaxHz); st >= p.Thermal.TripC {
			t.Errorf("%s: recommended %v settles at %.1f °C, not below the %.0f °C throttling point", p.Name, freqs, st, p.Thermal.TripC)
		}
		best := 0.0
		for _, c := range res.Candidates {
			if c.Summary.Verdict == "stable" && c.Summary.MeanMFLOPS > best {
				best = c.Summary.MeanMFLOPS
			}
		}
		saved := filepath.Join(cfg, "perflab", "profiles", governor.FileName(p.Model))
		b, err := os.ReadFile(saved)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		var tuned governor.Tuned
		if err := json.Unmarshal(b, &tuned); err != nil || !reflect.DeepEqual(tuned.Recommended, *res.Recommended) {
			t.Errorf("%s: saved profile differs: %v", p.Name, err)
		}
		// "recommended" now means the tuned profile, and it checks stable.
		code, _, sum := checkJSON(t, "sim:"+p.Name, "--profile", "recommended")
		var mean float64
		json.Unmarshal(sum["mean_mflops"], &mean)
		if code != 0 || mean < 0.98*best {
			t.Errorf("%s: check of the tuned profile: exit %d, %.0f MFLOPS vs best stable candidate %.0f", p.Name, code, mean, best)
		}
	}
}
