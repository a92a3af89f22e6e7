package devices

import (
	"context"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

func TestOpenLocal(t *testing.T) {
	dev, err := Open(context.Background(), "local", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if info := dev.Info(); info.ID != "local" || info.Backend != "local" || !info.Has("state_dir") {
		t.Errorf("info %+v", info)
	}
	if _, ok := dev.(lab.Prober); !ok {
		t.Errorf("local (%T) is not a lab.Prober", dev)
	}
	if _, ok := dev.(lab.Governor); !ok {
		t.Errorf("local (%T) is not a lab.Governor", dev)
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct{ id, want string }{
		{"", "no device given"},
		{"nowhere:1", `unknown backend "nowhere" (known: local`},
		{"local:extra", "the local device takes no argument"},
		{"adb:R58M@nohost", `device "adb:R58M@nohost": adb server "nohost": want HOST:PORT`},
		{"adb:@127.0.0.1:1", `device "adb:": name the phone`},
		{"adb:R58M@127.0.0.1:1", "device R58M not found on adb server(s) 127.0.0.1:1"},
	}
	for _, tt := range tests {
		if _, err := Open(context.Background(), tt.id, Options{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q): %v, want %q", tt.id, err, tt.want)
		}
	}
}

func TestListIncludesLocal(t *testing.T) {
	list, _ := List(context.Background(), Options{ADBServers: []string{"127.0.0.1:1"}})
	found := false
	for i, d := range list {
		if d.ID == "local" {
			found = true
			if _, ok := d.Props["instructions"]; !ok {
				t.Errorf("local lists no instructions status: %+v", d.Props)
			}
			// The workbench's `c` runs the probe where the listing says so.
			if !d.Has(lab.CapProbe) {
				t.Errorf("local lists no probe: %v", d.Caps)
			}
		}
		if i > 0 && list[i-1].ID > d.ID {
			t.Errorf("not sorted: %s before %s", list[i-1].ID, d.ID)
		}
	}
	if !found {
		t.Errorf("local missing from %+v", list)
	}
}

func TestStatic(t *testing.T) {
	for _, tt := range []struct {
		id      string
		ok, sim bool
	}{{"sim:pixel", true, true}, {"sim:nexus5", true, true}, {"sim:nope", false, false}, {"local", false, false}, {"adb:X", false, false}, {"", false, false}} {
		info, ok := Static(tt.id)
		if ok != tt.ok || info.Has(lab.CapSimTime) != tt.sim || ok && info.ID != tt.id {
			t.Errorf("Static(%q) = %s %v %v, want ok %v sim_time %v", tt.id, info.ID, info.Caps, ok, tt.ok, tt.sim)
		}
	}
}

// TestSimSeedsUnchanged: a simulated phone's noise seed in a session, as
// opened by name with a session's seed and set up for its experiment, is
// the one sim's seed functions derive (pinned in lab/sim).
func TestSimSeedsUnchanged(t *testing.T) {
	b := lab.Build{App: "feed"}
	for _, c := range []struct {
		id            string
		seed, expSeed int64
		want          int64
	}{
		{"sim:pixel", 0, 9, 9},
		{"sim:pixel", 42, 9, 42},
		{"sim:pixel#2", 42, 42, 1000045},
		{"sim:pixel#3", 42, 42, 2000048},
	} {
		d, err := Open(context.Background(), c.id, Options{Seed: c.seed})
		if err != nil {
			t.Fatal(err)
		}
		exp := &lab.Experiment{Builds: map[string]lab.Build{"control": b, "treatment": b}, Trials: 2, Order: "alternate", Seed: c.expSeed}
		if _, err := d.Setup(context.Background(), exp); err != nil {
			t.Fatal(err)
		}
		ph := d.(interface{ Phone() *sim.Phone })
		if got := ph.Phone().Seed(); got != c.want {
			t.Errorf("%s with seed %d, experiment seed %d: noise seed %d, want %d", c.id, c.seed, c.expSeed, got, c.want)
		}
		d.Close()
	}
}
