package simdevice

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

func TestUnits(t *testing.T) {
	tests := []struct {
		name     string
		base     Options
		n        int
		spread   float64
		serials  []string
		seeds    []int64
		slowdown []float64
		err      string
	}{
		{"one phone is the model itself", Options{Preset: "pixel", Seed: 7}, 1, 0.2,
			[]string{""}, []int64{7}, []float64{1}, ""},
		{"four phones of the preset's serial", Options{Preset: "pixel", Seed: 1}, 4, 0.1,
			[]string{"SIMBLUELINE-1", "SIMBLUELINE-2", "SIMBLUELINE-3", "SIMBLUELINE-4"}, []int64{1, 2, 3, 4},
			[]float64{1, 1 + 0.1/3, 1 + 0.2/3, 1.1}, ""},
		{"a given serial", Options{Preset: "nexus5", Serial: "LAB"}, 2, 0,
			[]string{"LAB-1", "LAB-2"}, []int64{0, 1}, []float64{1, 1}, ""},
		{"no phones", Options{}, 0, 0, nil, nil, nil, "count 0"},
		{"negative spread", Options{}, 2, -0.1, nil, nil, nil, "spread -0.1"},
		{"bad preset", Options{Preset: "iphone"}, 2, 0, nil, nil, nil, "iphone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			us, err := Units(tt.base, tt.n, tt.spread)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one naming %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(us) != tt.n {
				t.Fatalf("%d units, want %d", len(us), tt.n)
			}
			for i, u := range us {
				if u.Serial != tt.serials[i] || u.Seed != tt.seeds[i] || fmt.Sprintf("%.9f", u.Slowdown) != fmt.Sprintf("%.9f", tt.slowdown[i]) || u.Preset != tt.base.Preset {
					t.Errorf("unit %d: serial %q seed %d slowdown %v preset %q, want %q %d %v %q", i, u.Serial, u.Seed, u.Slowdown, u.Preset,
						tt.serials[i], tt.seeds[i], tt.slowdown[i], tt.base.Preset)
				}
			}
		})
	}
}

func TestListenConsecutive(t *testing.T) {
	// A free port P with P+1 taken: the block cannot start at P or P+1.
	var first int
	var blocker net.Listener
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p > 60000 || reservedPort(p) || reservedPort(p+1) {
			continue
		}
		if b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1)); err == nil {
			first, blocker = p, b
			break
		}
	}
	if blocker == nil {
		t.Skip("found no free port with a free neighbour")
	}
	defer blocker.Close()
	lns, err := ListenConsecutive(fmt.Sprintf("127.0.0.1:%d", first), 3)
	if err != nil {
		t.Fatal(err)
	}
	var ports []int
	for _, ln := range lns {
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		defer ln.Close()
	}
	if len(ports) != 3 || ports[0] <= first+1 || ports[1] != ports[0]+1 || ports[2] != ports[0]+2 {
		t.Errorf("ports %v from %d with %d taken: want 3 consecutive above %d", ports, first, first+1, first+1)
	}

	// The reserved range is skipped.
	if lns, err := ListenConsecutive("127.0.0.1:5583", 2); err == nil {
		for _, ln := range lns {
			if p := ln.Addr().(*net.TCPAddr).Port; reservedPort(p) {
				t.Errorf("bound adb's port %d", p)
			}
			ln.Close()
		}
	}

	// Port 0: n kernel-chosen ports.
	lns, err = ListenConsecutive("127.0.0.1:0", 2)
	if err != nil || len(lns) != 2 {
		t.Fatalf("port 0: %v %v", lns, err)
	}
	for _, ln := range lns {
		ln.Close()
	}

	for _, bad := range []string{"nohost", "127.0.0.1:x", "127.0.0.1:70000"} {
		if _, err := ListenConsecutive(bad, 1); err == nil || !strings.Contains(err.Error(), "listen address") {
			t.Errorf("%q: err %v, want one naming the listen address", bad, err)
		}
	}
}
