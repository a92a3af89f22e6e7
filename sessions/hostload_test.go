package sessions

import (
	"math"
	"testing"

	"github.com/perflab/perflab/lab"
)

// hostLoads returns n host loads with the given other CPUs in turn.
func hostLoads(n int, load1 float64, cpus int, other ...float64) []lab.HostLoad {
	hs := make([]lab.HostLoad, n)
	for i := range hs {
		hs[i] = lab.HostLoad{OtherCPUs: other[i%len(other)], Load1: load1, CPUs: cpus}
	}
	return hs
}

func TestHostWarning(t *testing.T) {
	tests := []struct {
		name  string
		loads []lab.HostLoad
		mean  float64
		want  string
	}{
		{"none", nil, 0, ""},
		{"idle", hostLoads(30, 0.4, 2, 0.02, 0.05, -0.01), 0.02, ""},
		{"busy", hostLoads(30, 2.1, 2, 1.2, 1.4), 1.3,
			"host busy: other processes used 1.3 CPUs on average during the trials (load average 2.1 on 2 CPUs); timings are noisier than on an idle host"},
		{"busy, 3 trials: too few", hostLoads(3, 2.1, 2, 1.3), 1.3, ""},
		{"busy, 4 trials", hostLoads(4, 1.02, 1, 0.9, 1.1), 1, "host busy: other processes used 1.0 CPUs on average during the trials (load average 1.0 on 1 CPU); timings are noisier than on an idle host"},
		{"just past the threshold, steady", hostLoads(40, 1.3, 4, 0.29, 0.31), 0.3,
			"host busy: other processes used 0.30 CPUs on average during the trials (load average 1.3 on 4 CPUs); timings are noisier than on an idle host"},
		{"at the threshold", hostLoads(40, 1.3, 4, 0.25), 0.25, ""},
		// Trials of 1 ms on 2 CPUs: 19 of 20 see no tick of others, one a
		// whole 10 ms tick. The mean (0.5) is above the threshold, but its
		// standard error (1) says it is no measurement.
		{"short trials: ticks", hostLoads(20, 0.3, 2, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5,
			-0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, 19.5), 0.5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SummarizeHost(tt.loads)
			if s.Trials != len(tt.loads) || math.Abs(s.OtherCPUs-tt.mean) > 1e-9 {
				t.Errorf("summary %+v, want %d trials, mean %g", s, len(tt.loads), tt.mean)
			}
			if got := s.Warning(); got != tt.want {
				t.Errorf("warning\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestHostSummarySE: the standard error is the sample standard deviation
// over √n.
func TestHostSummarySE(t *testing.T) {
	s := SummarizeHost(hostLoads(4, 1, 2, 1, 2, 3, 4))
	if want := math.Sqrt(5.0 / 3 / 4); math.Abs(s.SE-want) > 1e-12 || s.OtherCPUs != 2.5 || s.Load1 != 1 || s.CPUs != 2 {
		t.Errorf("summary %+v, want mean 2.5, SE %g, load 1, 2 CPUs", s, want)
	}
}

// TestHostWarningsCountedTrials: only counted trials with a host load are
// judged (not warm-ups, failures, or trials without one).
func TestHostWarningsCountedTrials(t *testing.T) {
	busy := &lab.HostLoad{OtherCPUs: 1.5, Load1: 2.5, CPUs: 2}
	trial := func(status string, warmup bool, h *lab.HostLoad) lab.Event {
		return lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Status: status, Warmup: warmup, Host: h}}
	}
	var evs []lab.Event
	for range 3 {
		evs = append(evs, trial(lab.StatusOK, false, busy), trial(lab.StatusOK, true, busy),
			trial(lab.StatusFailed, false, busy), trial(lab.StatusOK, false, nil))
	}
	evs = append(evs, lab.Event{Type: lab.EventNote, Note: &lab.Note{Text: "x"}})
	if w := HostWarnings(evs); w != nil {
		t.Errorf("3 counted trials with a host load: %q, want no warning", w)
	}
	evs = append(evs, trial(lab.StatusOK, false, busy))
	want := "host busy: other processes used 1.5 CPUs on average during the trials (load average 2.5 on 2 CPUs); timings are noisier than on an idle host"
	if w := HostWarnings(evs); len(w) != 1 || w[0] != want {
		t.Errorf("4 counted trials: %q, want %q", w, want)
	}
}
