package sessions

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
)

// Profiles of a session: one pprof file per profiled trial in a folder
// beside the session file (SESSION.profiles/trial-000012.pb.gz), each
// written whole (a temporary file, synced, renamed) before the trial's
// line names it with its checksum, so that a crash loses at most the
// trial in flight's profile. Every sample carries the experiment's labels
// (arm, build, trial, round, device, warmup) and the app's phase, so that
// `go tool pprof -tagfocus arm=treatment` and `-tagfocus phase=scroll`
// cut the merged profiles as the seed's trampoline histories do.

// ProfileDir is the folder of a session's profiles.
func ProfileDir(sessionPath string) string {
	return strings.TrimSuffix(sessionPath, filepath.Ext(sessionPath)) + ".profiles"
}

// TrialLabels are the labels every sample of trial t gets; device names
// the device in a single-device session (t.Device in a pool).
func TrialLabels(t *lab.Trial, device string) map[string]string {
	if t.Device != "" {
		device = t.Device
	}
	return map[string]string{
		"arm": t.Arm, "build": t.Build, "trial": strconv.Itoa(t.Index), "round": strconv.Itoa(t.Round),
		"device": device, "warmup": strconv.FormatBool(t.Warmup),
	}
}

// ToPprof converts a trial's profile to pprof's form: sample types
// samples/count and cpu/nanoseconds, labels on every sample, the phase
// among them when it has one; samples of one stack in one phase are
// summed into one. A frame with an address keeps it and its mapping
// (the binary's path, build ID, start, limit, offset), so that `go tool
// pprof` can symbolize it with the binary or its debug file; a mapping
// whose frames are not all named says so (HasFunctions false). A frame
// without one (the simulated phone's) is one location per function.
func ToPprof(p *lab.Profile, labels map[string]string) *profile.Profile {
	pp := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     p.PeriodNs,
	}
	if p.Source != "" {
		pp.Comments = append(pp.Comments, "perflab profile source: "+p.Source)
	}
	pp.Comments = append(pp.Comments, p.Notes...)
	for i, m := range p.Mappings {
		pp.Mapping = append(pp.Mapping, &profile.Mapping{
			ID: uint64(i + 1), Start: m.Start, Limit: m.Limit, Offset: m.Offset, File: m.File, BuildID: m.BuildID,
			HasFunctions: m.Symbolized,
		})
	}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(pp.Function) + 1), Name: name, SystemName: name}
		pp.Function = append(pp.Function, f)
		funcs[name] = f
		return f
	}
	type locKey struct {
		name string
		addr uint64
		m    int
	}
	locs := map[locKey]*profile.Location{}
	loc := func(name string, fr lab.Frame) *profile.Location {
		if fr.Mapping <= 0 || fr.Mapping > len(pp.Mapping) {
			fr = lab.Frame{}
		}
		k := locKey{name, fr.Addr, fr.Mapping}
		if l, ok := locs[k]; ok {
			return l
		}
		l := &profile.Location{ID: uint64(len(pp.Location) + 1), Address: fr.Addr, Line: []profile.Line{{Function: fn(name)}}}
		if fr.Mapping > 0 {
			l.Mapping = pp.Mapping[fr.Mapping-1]
		}
		pp.Location = append(pp.Location, l)
		locs[k] = l
		return l
	}
	base := map[string][]string{}
	for k, v := range labels {
		base[k] = []string{v}
	}
	// Samples of the same stack in the same phase become one, with their
	// count and time: the phase is the finest label a sample needs (it was
	// joined by time already), and a file of distinct stacks reads fast.
	type key struct{ stack, phase string }
	agg := map[key]*profile.Sample{}
	var kb []byte
	for _, s := range p.Samples {
		withFrames := len(s.Frames) == len(s.Stack)
		kb = kb[:0]
		for i, name := range s.Stack {
			kb = append(kb, name...)
			if withFrames {
				kb = append(kb, '@')
				kb = strconv.AppendUint(kb, s.Frames[i].Addr, 16)
				kb = append(kb, '/')
				kb = strconv.AppendInt(kb, int64(s.Frames[i].Mapping), 10)
			}
			kb = append(kb, 0)
		}
		k := key{string(kb), s.Phase}
		if x, ok := agg[k]; ok {
			x.Value[0] += s.Samples()
			x.Value[1] += p.Weight(s)
			continue
		}
		ls := make([]*profile.Location, len(s.Stack))
		for i, name := range s.Stack {
			var fr lab.Frame
			if withFrames {
				fr = s.Frames[i]
			}
			ls[i] = loc(name, fr)
		}
		lbl := base
		if s.Phase != "" {
			lbl = make(map[string][]string, len(base)+1)
			for k, v := range base {
				lbl[k] = v
			}
			lbl["phase"] = []string{s.Phase}
		}
		x := &profile.Sample{Location: ls, Value: []int64{s.Samples(), p.Weight(s)}, Label: lbl}
		agg[k] = x
		pp.Sample = append(pp.Sample, x)
	}
	return pp
}

// WriteTrialProfile writes trial t's profile p beside the session at
// sessionPath and returns the reference its line carries. A failure to
// write is returned as the reference's note (the run goes on without the
// profile), never as an error of the session.
func WriteTrialProfile(sessionPath string, t *lab.Trial, device string, p *lab.Profile) *lab.ProfileRef {
	ref := &lab.ProfileRef{Source: p.Source, Samples: len(p.Samples), Note: strings.Join(p.Notes, "; ")}
	if t.Profile != nil && t.Profile.Note != "" {
		ref.Note = strings.Trim(t.Profile.Note+"; "+ref.Note, "; ")
	}
	var buf bytes.Buffer
	if err := ToPprof(p, TrialLabels(t, device)).Write(&buf); err != nil {
		ref.Note = strings.Trim(ref.Note+"; profile not written: "+err.Error(), "; ")
		return ref
	}
	dir := ProfileDir(sessionPath)
	name := fmt.Sprintf("trial-%06d.pb.gz", t.Index)
	if err := writeSynced(dir, name, buf.Bytes()); err != nil {
		ref.Note = strings.Trim(ref.Note+"; profile not written: "+err.Error(), "; ")
		return ref
	}
	sum := sha256.Sum256(buf.Bytes())
	ref.File = filepath.Join(filepath.Base(dir), name)
	ref.SHA256 = hex.EncodeToString(sum[:])
	return ref
}

// writeSynced writes data to dir/name whole: a temporary file, synced,
// renamed over the name, the folder synced.
func writeSynced(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// LoadTrialProfile reads the profile ref names, beside the session at
// sessionPath, checking its checksum; the error names the file and what
// is wrong with it.
func LoadTrialProfile(sessionPath string, ref *lab.ProfileRef) (*profile.Profile, error) {
	if ref == nil || ref.File == "" {
		return nil, fmt.Errorf("no profile file")
	}
	path := filepath.Join(filepath.Dir(sessionPath), ref.File)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); ref.SHA256 != "" && hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("%s: checksum differs from the session's (the file changed or is cut short)", path)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not a pprof profile: %w", path, err)
	}
	return p, nil
}

// WriteFolded writes p's samples as collapsed stacks, one line per
// distinct stack, root first, frames separated by ";" and the sample count
// last (Brendan Gregg's format, which flame-graph tools and speedscope
// read), in the order first seen.
func WriteFolded(w io.Writer, p *profile.Profile) error {
	counts := map[string]int64{}
	var order []string
	for _, s := range p.Sample {
		frames := make([]string, 0, len(s.Location))
		for i := len(s.Location) - 1; i >= 0; i-- {
			frames = append(frames, strings.ReplaceAll(FuncName(s.Location[i]), ";", ":"))
		}
		key := strings.Join(frames, ";")
		if _, ok := counts[key]; !ok {
			order = append(order, key)
		}
		if len(s.Value) > 0 {
			counts[key] += s.Value[0]
		}
	}
	bw := bufio.NewWriter(w)
	for _, k := range order {
		fmt.Fprintf(bw, "%s %d\n", k, counts[k])
	}
	return bw.Flush()
}

// FuncName is the function a pprof location stands for: its first line's,
// the innermost one where functions were inlined into it (pprof lists the
// caller last), or its address when it has no symbol.
func FuncName(l *profile.Location) string {
	if len(l.Line) > 0 && l.Line[0].Function != nil {
		return l.Line[0].Function.Name
	}
	return fmt.Sprintf("0x%x", l.Address)
}

// Symbolize names the locations of p a profiler left unnamed (BINARY+0xADDR,
// or a bare address) whose mapping names their binary, from res: the
// binary's symbols, its debug file, or a copy in res's symbols folder
// (perflab profile --symbols DIR). It returns how many it named; a
// mapping all of whose locations are then named says so.
func Symbolize(p *profile.Profile, res *elfsym.Resolver) int {
	named := 0
	funcs := map[string]*profile.Function{}
	for _, f := range p.Function {
		funcs[f.Name] = f
	}
	unnamed := map[*profile.Mapping]bool{}
	for _, l := range p.Location {
		if len(l.Line) > 1 || l.Mapping == nil || l.Mapping.File == "" {
			continue
		}
		if len(l.Line) == 1 {
			if l.Line[0].Function == nil {
				continue
			}
			if _, unknown := elfsym.Unsymbolized(l.Line[0].Function.Name); !unknown {
				continue
			}
		}
		m := l.Mapping
		b := res.Open(m.File)
		if m.BuildID != "" && b.BuildID != "" && b.BuildID != m.BuildID {
			unnamed[m] = true
			continue // another build of the binary: its symbols would lie
		}
		vaddr, _ := b.Addr(l.Address - m.Start + m.Offset)
		name := b.Name(vaddr)
		if name == "" {
			unnamed[m] = true
			continue
		}
		f, ok := funcs[name]
		if !ok {
			f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
			p.Function = append(p.Function, f)
			funcs[name] = f
		}
		l.Line = []profile.Line{{Function: f}}
		named++
	}
	for _, m := range p.Mapping {
		if !m.HasFunctions && !unnamed[m] && named > 0 {
			m.HasFunctions = true
		}
	}
	return named
}
