package local

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		busy uint64
		cpus int
		ok   bool
	}{
		{"2 CPUs", "cpu  116003 7 32898 16821 460 5 253 269 11 13\ncpu0 58015 0 15873 9187 60 0 87 133 0 0\ncpu1 57988 7 17025 7633 400 5 166 136 0 0\nintr 1 2 3\nctxt 9\n",
			116003 + 7 + 32898 + 5 + 253 + 269, 2, true},
		{"no steal (before 2.6.11)", "cpu 10 1 5 100 3 2 1\ncpu0 10 1 5 100 3 2 1\n", 19, 1, true},
		{"4 fields", "cpu 10 1 5 100\ncpu0 10 1 5 100\n", 16, 1, true},
		{"last line", "cpu 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8", 1 + 2 + 3 + 6 + 7 + 8, 1, true},
		{"no cpuN lines", "cpu 1 2 3 4 5 6 7 8\nintr 1\n", 0, 0, false},
		{"too few fields", "cpu 1 2 3\ncpu0 1 2 3\n", 0, 0, false},
		{"not a number", "cpu 1 x 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n", 0, 0, false},
		{"cpu0 first", "cpu0 1 2 3 4 5 6 7 8\n", 0, 0, false},
		{"empty", "", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy, cpus, ok := parseProcStat([]byte(tt.in))
			if ok != tt.ok || ok && (busy != tt.busy || cpus != tt.cpus) {
				t.Errorf("parseProcStat = %d, %d, %v; want %d, %d, %v", busy, cpus, ok, tt.busy, tt.cpus, tt.ok)
			}
		})
	}
}

func TestParseLoadavg(t *testing.T) {
	for in, want := range map[string]float64{"3.44 3.88 2.46 5/105 1229\n": 3.44, "0.00 0.01 0.05 1/80 7": 0} {
		if v, ok := parseLoadavg([]byte(in)); !ok || v != want {
			t.Errorf("parseLoadavg(%q) = %v, %v; want %v", in, v, ok, want)
		}
	}
	for _, in := range []string{"", "x 1 2", "-1 0 0", "NaN 1 1", "Inf 1 1"} {
		if v, ok := parseLoadavg([]byte(in)); ok {
			t.Errorf("parseLoadavg(%q) = %v, want refused", in, v)
		}
	}
}

func TestOtherCPUs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	mark := func(at time.Duration, busy uint64, self time.Duration) hostMark {
		return hostMark{at: t0.Add(at), busy: busy, cpus: 2, self: self}
	}
	tests := []struct {
		name          string
		before, after hostMark
		own           time.Duration
		want          float64
		ok            bool
	}{
		// 100 ms: 25 ticks busy (250 ms), of which the command 100 ms and
		// perflab 20 ms: others 130 ms, 1.3 CPUs.
		{"busy", mark(0, 1000, 50*ms), mark(100*ms, 1025, 70*ms), 100 * ms, 1.3, true},
		{"idle", mark(0, 1000, 0), mark(200*ms, 1020, 0), 200 * ms, 0, true},
		// A 3 ms trial that no tick saw: below 0, not clamped.
		{"no tick", mark(0, 7, 0), mark(3*ms, 7, 0), 2 * ms, -0.667, true},
		{"no time", mark(0, 7, 0), mark(0, 8, 0), 0, 0, false},
		{"counter back", mark(0, 8, 0), mark(ms, 7, 0), 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := otherCPUs(tt.before, tt.after, tt.own, 10*ms)
			if ok != tt.ok || got != tt.want {
				t.Errorf("otherCPUs = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestClockTick: /proc/stat counts in the auxiliary vector's USER_HZ
// (100 on every Linux architecture Go supports).
func TestClockTick(t *testing.T) {
	if got := clockTick(); got != 10*time.Millisecond {
		t.Errorf("clockTick() = %v, want 10ms", got)
	}
}

// TestHostLoadRecorded runs a short local experiment through the runner
// and a session file: every counted trial carries a sane host load. How
// busy this (shared) host is, is not asserted.
func TestHostLoadRecorded(t *testing.T) {
	script := []string{"sh", "-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done"}
	exp := &lab.Experiment{Device: "local", Trials: 3, Warmup: 1, Order: lab.OrderAlternate, Builds: map[string]lab.Build{
		lab.ArmControl: {Command: script}, lab.ArmTreatment: {Command: script},
	}}
	d := New()
	defer d.Close()
	if _, err := d.Setup(context.Background(), exp); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := sessions.Create(path, sessions.Header{ID: "host"})
	if err != nil {
		t.Fatal(err)
	}
	for e := range lab.NewRunner(d, exp).Run(context.Background()) {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range s.Events {
		tr := e.Trial
		if tr == nil || tr.Status != lab.StatusOK {
			continue
		}
		n++
		h := tr.Host
		if h == nil {
			t.Errorf("trial %d: no host load", tr.Index)
			continue
		}
		// A trial's own value is coarse (whole ticks), so only its lower
		// bound holds: the busy time is never below 0, and the command
		// and perflab use at most all CPUs each.
		if h.CPUs < 1 || math.IsNaN(h.OtherCPUs) || math.IsInf(h.OtherCPUs, 0) || h.OtherCPUs < -2*float64(h.CPUs) ||
			!(h.Load1 >= 0) || math.IsInf(h.Load1, 0) {
			t.Errorf("trial %d: host %+v", tr.Index, *h)
		}
		for _, m := range tr.Metrics {
			if m.Name == "other_cpus" || m.Name == "load1" {
				t.Errorf("trial %d: host load recorded as metric %s", tr.Index, m.Name)
			}
		}
	}
	if n != 8 {
		t.Errorf("%d trials ok, want 8 (3 per arm and a warm-up each)", n)
	}
}

// BenchmarkHostMark is what measuring the host adds to a trial: two
// marks (a read of /proc/stat and getrusage each) and a read of
// /proc/loadavg.
func BenchmarkHostMark(b *testing.B) {
	var m hostMeter
	defer m.close()
	for b.Loop() {
		before, ok := m.mark()
		after, ok2 := m.mark()
		if !ok || !ok2 {
			b.Fatal("no /proc/stat")
		}
		if m.load(before, after, 0) == nil {
			b.Fatal("no load")
		}
	}
}

// TestSetupTwiceLeavesNoFolder: a second session's Setup on the same
// device removes the first one's folder, and Close the second's.
func TestSetupTwiceLeavesNoFolder(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	script := []string{"true"}
	exp := &lab.Experiment{Device: "local", Trials: 1, Order: lab.OrderAlternate, Builds: map[string]lab.Build{
		lab.ArmControl: {Command: script}, lab.ArmTreatment: {Command: script},
	}}
	d := New()
	for range 2 {
		if _, err := d.Setup(context.Background(), exp); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "perflab-local-*")); len(left) != 1 {
		t.Errorf("after two Setups: %v, want the second's folder only", left)
	}
	d.Close()
	if left, _ := filepath.Glob(filepath.Join(tmp, "perflab-local-*")); len(left) != 0 {
		t.Errorf("after Close: %v left", left)
	}
}
