package sessions

import (
	"reflect"
	"testing"

	"github.com/perflab/perflab/lab"
)

func TestTrialNotes(t *testing.T) {
	trial := func(dev, status, reason string) lab.Event {
		return lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Device: dev, Arm: "control", Status: status, Reason: reason}}
	}
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
