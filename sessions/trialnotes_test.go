package sessions

import (
	"reflect"
	"testing"

	"github.com/perflab/perflab/lab"
)

func trial(dev, status, reason string) lab.Event {
	return lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Device: dev, Arm: "control", Status: status, Reason: reason}}
}

func TestTrialNotes(t *testing.T) {
	left := func(dev, reason string) lab.Event {
		return lab.Event{Type: lab.EventDevice, Device: &lab.DeviceState{Device: dev, State: lab.DeviceLeft, Reason: reason}}
	}
	tests := []struct {
		name   string
		events []lab.Event
		want   []string
	}{
		{"nothing said", []lab.Event{trial("a", lab.StatusOK, ""), trial("a", lab.StatusFailed, "exit status 1")}, nil},
		{"a benchmark failing in some trials", []lab.Event{
			trial("a", lab.StatusOK, "benchmark m.X failed; benchmark m.Y failed"),
			trial("a", lab.StatusOK, "benchmark m.X failed"),
			trial("a", lab.StatusOK, ""),
		}, []string{
			"benchmark m.X failed (in 2 of 3 counted trials): its metrics lack those trials",
			"benchmark m.Y failed (in 1 of 3 counted trials): its metrics lack those trials",
		}},
		{"devices leaving a pool, in the order they left", []lab.Event{
			left("ssh://full", "error: device setup: copying: tar: Wrote only 10 of 20 bytes"),
			trial("ssh://w1", lab.StatusOK, ""),
			trial("ssh://w2", lab.StatusOK, ""),
			left("ssh://w2", "device-lost: connection closed"),
			{Type: lab.EventDevice, Device: &lab.DeviceState{Device: "ssh://w1", State: lab.DeviceOffline}},
		}, []string{
			"ssh://full left the pool after 0 trials (error: device setup: copying: tar: Wrote only 10 of 20 bytes): the other devices ran the rest",
			"ssh://w2 left the pool after 1 trial (device-lost: connection closed): the other devices ran the rest",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TrialNotes(tt.events); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("TrialNotes = %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFailureNotes(t *testing.T) {
	warm := trial("", lab.StatusFailed, "warm-up broke")
	warm.Trial.Warmup = true
	events := []lab.Event{warm, trial("", lab.StatusInterrupted, "cancelled")}
	for range 4 {
		events = append(events, trial("", lab.StatusOK, ""))
	}
	add := func(n int, status, reason string) {
		for range n {
			events = append(events, trial("", status, reason))
		}
	}
	tests := []struct {
		name string
		add  func()
		want []string
	}{
		{"none failed", func() {}, nil},
		{"by reason, most frequent first", func() {
			add(3, lab.StatusFailed, "b: bad line")
			add(1, lab.StatusTimeout, "exceeded trial_timeout of 5s")
		}, []string{
			"3 of 8 trials failed or timed out: b: bad line",
			"1 of 8 trials failed or timed out: exceeded trial_timeout of 5s",
		}},
		{"three, then the rest", func() {
			add(2, lab.StatusFailed, "a")
			add(2, lab.StatusFailed, "")
			add(1, lab.StatusFailed, "c")
			add(1, lab.StatusFailed, "d")
		}, []string{
			"3 of 14 trials failed or timed out: b: bad line",
			"2 of 14 trials failed or timed out: no reason given",
			"2 of 14 trials failed or timed out: a",
			"3 more failed or timed out, for 3 other reasons",
		}},
	}
	for _, tt := range tests {
		tt.add()
		if got := FailureNotes(events); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: FailureNotes = %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
