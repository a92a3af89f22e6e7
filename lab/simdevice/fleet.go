package simdevice

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/perflab/perflab/lab/sim"
)

// Units returns the options of n simulated phones of one model, as a lab
// holds them: phone i (from 0) gets seed sim.UnitSeed(base.Seed, i) (its own noise),
// serial base.Serial+"-"+(i+1) (when n > 1; an empty base serial stands
// for the preset's), and slowdown 1 + spread·i/(n-1), so the fastest runs
// at the model's nominal speed and the slowest is spread slower.
func Units(base Options, n int, spread float64) ([]Options, error) {
	if n < 1 {
		return nil, fmt.Errorf("count %d: want at least 1 phone", n)
	}
	if !(spread >= 0 && spread < 10) {
		return nil, fmt.Errorf("spread %v: want a fraction ≥ 0 (0.1: the slowest phone is 10%% slower than the fastest)", spread)
	}
	out := make([]Options, n)
	for i := range out {
		o := base
		o.Seed = sim.UnitSeed(base.Seed, i)
		o.Slowdown = 1
		if n > 1 {
			o.Slowdown = 1 + spread*float64(i)/float64(n-1)
			if o.Serial == "" {
				preset := base.Preset
				if preset == "" {
					preset = "pixel"
				}
				ph, err := sim.New(preset, 0)
				if err != nil {
					return nil, err
				}
				o.Serial = ph.Prop("ro.serialno")
			}
			o.Serial += "-" + strconv.Itoa(i+1)
		}
		out[i] = o
	}
	return out, nil
}

// reservedPort reports the ports adb itself uses: its server's default
// and the range it scans for emulators.
func reservedPort(p int) bool { return p == 5037 || p >= 5554 && p <= 5585 }

// maxPortSearch bounds how far ListenConsecutive looks past the first port.
const maxPortSearch = 2000

// ListenConsecutive binds n TCP listeners on HOST at consecutive free ports,
// the lowest block at or above addr's port (skipping 5037 and 5554–5585,
// which adb treats specially). Port 0 binds n ports the kernel picks,
// consecutive or not. On error nothing stays bound.
func ListenConsecutive(addr string, n int) ([]net.Listener, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	first, err := strconv.Atoi(ps)
	if err != nil || first < 0 || first > 65535 {
		return nil, fmt.Errorf("listen address %q: bad port %q", addr, ps)
	}
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
		lns = nil
	}
	if first == 0 {
		for range n {
			ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
			if err != nil {
				closeAll()
				return nil, err
			}
			lns = append(lns, ln)
		}
		return lns, nil
	}
	base := first
	for base+n-1 <= 65535 && base-first < maxPortSearch {
		ok := true
		for p := base; p < base+n; p++ {
			if reservedPort(p) {
				closeAll()
				base, ok = p+1, false
				break
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
			if errors.Is(err, syscall.EADDRINUSE) {
				closeAll()
				base, ok = p+1, false
				break
			}
			if err != nil {
				closeAll()
				return nil, err
			}
			lns = append(lns, ln)
		}
		if ok {
			return lns, nil
		}
	}
	return nil, fmt.Errorf("no %d consecutive free ports on %s from %d to %d", n, host, first, min(first+maxPortSearch, 65535))
}
