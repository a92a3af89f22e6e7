package sim

import (
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
)

// The simulated phone's CPU profiles: a launch sampled over its app's
// call tree, every frame with its simulated binary's mapping.

// profile samples launch l of pkg (Launch's breakdown over the app's call
// tree), from a stream of the phone's seed and the trial's index, so that
// profiling changes none of the launch's numbers.
func (d *Device) profile(pkg string, l Launch, trial int) *lab.Profile {
	return LaunchProfile(pkg, l, rand.New(rand.NewPCG(uint64(d.ph.Seed()), 0x70726f66<<20^uint64(trial))))
}

// LaunchProfile samples launch l of package pkg over its app's call tree
// (CallTree.Profile of the launch's breakdown and total, with the build's
// function effect), times in nanoseconds since the launch began; nil for a
// package that is not a sim app. rng should be a stream of its own.
func LaunchProfile(pkg string, l Launch, rng *rand.Rand) *lab.Profile {
	app, _, _, _, ok := parsePackage(pkg)
	if !ok {
		return nil
	}
	p := NewCallTree(app).Profile(l.Breakdown, float64(l.Total)/float64(time.Millisecond), l.Breakdown.Fn, l.Breakdown.FnExtra, rng)
	withBinaries(p, pkg)
	return p
}

// withBinaries gives every frame of p its simulated binary's mapping and
// its address in it (FuncBinary, FuncAddr: what the simulated phone's
// simpleperf reports too), so the sim's pprof files have the shape of a
// real profile's; every frame is named, so every mapping is symbolized.
func withBinaries(p *lab.Profile, pkg string) {
	maps := map[string]int{}
	frames := map[*string][]lab.Frame{} // stacks are shared by their samples
	for i := range p.Samples {
		s := &p.Samples[i]
		if len(s.Stack) == 0 {
			continue
		}
		fr, ok := frames[&s.Stack[0]]
		if !ok {
			fr = make([]lab.Frame, len(s.Stack))
			for j, fn := range s.Stack {
				file, addr := FuncBinary(fn, pkg), FuncAddr(fn)
				mi, seen := maps[file]
				if !seen {
					p.Mappings = append(p.Mappings, lab.Mapping{File: file, Symbolized: true})
					mi = len(p.Mappings)
					maps[file] = mi
				}
				m := &p.Mappings[mi-1]
				m.Limit = max(m.Limit, addr+1)
				fr[j] = lab.Frame{Addr: addr, Mapping: mi}
			}
			frames[&s.Stack[0]] = fr
		}
		s.Frames = fr
	}
}

// FuncAddr is a made-up but stable address of simulated function fn in
// its file.
func FuncAddr(fn string) uint64 {
	h := fnv.New32a()
	h.Write([]byte(fn))
	return uint64(h.Sum32()&0xfffff0 | 0x1000)
}

// FuncBinary is the file a simulated function of package pkg lives in on
// the phone.
func FuncBinary(fn, pkg string) string {
	switch {
	case strings.HasPrefix(fn, "android."):
		return "/system/framework/arm64/boot-framework.oat"
	case strings.HasPrefix(fn, "libc."):
		return "/apex/com.android.runtime/lib64/bionic/libc.so"
	case strings.HasPrefix(fn, "sqlite3."):
		return "/system/lib64/libsqlite.so"
	case strings.HasPrefix(fn, "art."):
		return "/apex/com.android.art/lib64/libart.so"
	}
	return "/data/app/" + pkg + "-1/oat/arm64/base.odex"
}

// CanProfile: every simulated app has a call tree (lab.Profiler).
func (d *Device) CanProfile() (bool, string) { return true, "" }

var _ lab.Profiler = (*Device)(nil)
