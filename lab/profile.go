package lab

import (
	"fmt"
	"sort"
)

// Profile is one trial's sampled CPU profile, as a device collected it:
// call stacks with their weight and time, and the app's phases (spans)
// that label them. The runner adds the experiment's own labels (arm,
// build, trial, round, device) when it writes the profile (sessions'
// profile files), as the seed's trampoline histories attach application
// context to every sample.
type Profile struct {
	// Source names the profiler: "sim", "perf" (Linux perf record), "pprof"
	// (a Go program's own CPU profile) or "simpleperf" (Android).
	Source string
	// PeriodNs is the sampling period: each sample stands for this much
	// CPU time (the weight of a sample with Weight 0).
	PeriodNs int64
	Samples  []ProfileSample
	// Spans are the app's phases, on the samples' clock (nanoseconds since
	// the trial started): begin and end reported by the app (PERFLAB_SPAN
	// lines) or by the simulated app.
	Spans []Span
	// Notes say what was lost or approximated (a truncated file, samples
	// without symbols, a span without an end); never fatal.
	Notes []string
	// Mappings are the binaries the samples ran in (perf's mmap events,
	// a Go profile's mappings), so that pprof can symbolize the profile
	// later with the binary or its debug file; Frames refer to them.
	Mappings []Mapping
}

// Mapping is one binary mapped into the profiled process: the addresses
// [Start, Limit) map File from Offset on.
type Mapping struct {
	Start, Limit, Offset uint64
	File                 string
	BuildID              string
	// Symbolized says every frame in it has a function name (pprof need
	// not symbolize it again).
	Symbolized bool
}

// Frame is where one frame of a sample ran: its address in the process
// and its mapping (1-based index into Profile.Mappings; 0: none).
type Frame struct {
	Addr    uint64
	Mapping int
}

// ProfileSample is one sampled call stack.
type ProfileSample struct {
	// Stack holds the function names, leaf (where the CPU was) first.
	Stack []string
	// Frames, when the profiler gave addresses, holds each of Stack's
	// frames' address and mapping (same length as Stack).
	Frames []Frame
	// TimeNs is when the sample was taken, in nanoseconds since the trial
	// started (the spans' clock); negative when unknown.
	TimeNs int64
	// Weight is the CPU time it stands for in nanoseconds (0: PeriodNs).
	Weight int64
	// Count is how many samples it stands for (0: one); a profiler that
	// sums its samples (Go's pprof) gives more.
	Count int64
	// Phase is the app's phase at TimeNs (Profile.Label fills it).
	Phase string
}

// Span is one phase of the app: [StartNs, EndNs) on the samples' clock.
type Span struct {
	Name    string
	StartNs int64
	EndNs   int64
}

// Label gives every sample the phase of the span that holds its time
// (the innermost: the latest started), joining samples to the app's label
// history by timestamp as trampoline histories do after the fact. Spans
// without an end (EndNs ≤ StartNs) are closed at the last sample and
// noted.
func (p *Profile) Label() {
	if p == nil || len(p.Spans) == 0 {
		return
	}
	last := int64(0)
	for _, s := range p.Samples {
		last = max(last, s.TimeNs)
	}
	spans := append([]Span(nil), p.Spans...)
	for i := range spans {
		if spans[i].EndNs <= spans[i].StartNs {
			p.Notes = append(p.Notes, fmt.Sprintf("phase %q has no end: closed at the last sample", spans[i].Name))
			spans[i].EndNs = last + 1
		}
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].StartNs < spans[j].StartNs })
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.TimeNs < 0 {
			continue
		}
		// The latest started span that still holds the sample.
		k := sort.Search(len(spans), func(k int) bool { return spans[k].StartNs > s.TimeNs })
		for k--; k >= 0; k-- {
			if s.TimeNs < spans[k].EndNs {
				s.Phase = spans[k].Name
				break
			}
		}
	}
}

// TotalNs is the CPU time of all samples.
func (p *Profile) TotalNs() int64 {
	var t int64
	for _, s := range p.Samples {
		t += p.weight(s)
	}
	return t
}

func (p *Profile) weight(s ProfileSample) int64 {
	if s.Weight > 0 {
		return s.Weight
	}
	return p.PeriodNs
}

// Weight is the CPU time sample s stands for.
func (p *Profile) Weight(s ProfileSample) int64 { return p.weight(s) }

// Samples is how many samples s stands for.
func (s ProfileSample) Samples() int64 { return max(s.Count, 1) }

// ProfileRef names a trial's profile file (pprof protobuf, gzipped) beside
// its session, with its checksum; Note says what was lost or why there is
// no file (File empty).
type ProfileRef struct {
	File    string `json:"file"`    // relative to the session file's folder
	SHA256  string `json:"sha256"`  // of the file's bytes
	Samples int    `json:"samples"` // samples in it
	Source  string `json:"source"`  // Profile.Source
	Note    string `json:"note,omitempty"`
}

// Profiler is a device that can profile trials: with
// TrialRequest.Profile set it returns TrialResult.Profile, or a note in
// TrialResult.ProfileNote saying why not (perf missing, simpleperf too
// old), and the trial goes on unprofiled.
type Profiler interface {
	// CanProfile says whether trials can be profiled here, and if not why.
	CanProfile() (ok bool, why string)
}
