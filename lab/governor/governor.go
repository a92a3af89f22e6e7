// Package governor reads, applies and verifies governor profiles (CPU
// frequency locks, GPU frequency, thermal core control, input boost,
// mpdecision) through the sysfs files a Linux or Android kernel exposes.
//
// The same code drives every backend: the simulated phone (its in-memory
// sysfs), this host (real /sys through [OS]) and, later, phones over adb (a
// shell-backed [Files]). Each backend supplies [Files] and, where it has an
// init system, [Services].
package governor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/perflab/perflab/lab"
)

// Files reads and writes sysfs-like files. Errors wrap fs.ErrNotExist for
// missing files and fs.ErrPermission for files the caller may not write.
type Files interface {
	ReadFile(ctx context.Context, path string) (string, error)
	WriteFile(ctx context.Context, path, value string) error
}

// Services starts and stops init services such as mpdecision.
type Services interface {
	// ServiceRunning reports whether the named service runs; an error
	// wrapping fs.ErrNotExist means the device has no such service.
	ServiceRunning(ctx context.Context, name string) (bool, error)
	SetService(ctx context.Context, name string, run bool) error
}

// Well-known paths.
const (
	CPURoot         = "/sys/devices/system/cpu"
	ThermalCorePath = "/sys/module/msm_thermal/core_control/enabled"
	InputBoostPath  = "/sys/module/cpu_boost/parameters/input_boost_freq"
	KGSLPath        = "/sys/class/kgsl/kgsl-3d0"
	MPDecision      = "mpdecision"
)

// Layout is what Discover found: CPU clusters (CPUs sharing a frequency
// policy) and which optional controls exist.
type Layout struct {
	Clusters    []Cluster
	GPU         string // kgsl directory, "" when absent
	GPUFreqsHz  []int64
	GPUGovs     []string
	ThermalCore bool
	InputBoost  bool
	MPDecision  bool
}

// Cluster is a set of CPUs sharing one cpufreq policy.
type Cluster struct {
	CPUs        []int
	Governors   []string // scaling_available_governors
	Frequencies []int    // kHz, ascending; from scaling_available_frequencies or cpuinfo min/max
}

// MaxKHz is the highest frequency of the cluster.
func (c Cluster) MaxKHz() int {
	if len(c.Frequencies) == 0 {
		return 0
	}
	return c.Frequencies[len(c.Frequencies)-1]
}

// HasGovernor reports whether g is one of the cluster's available governors.
func (c Cluster) HasGovernor(g string) bool {
	for _, x := range c.Governors {
		if x == g {
			return true
		}
	}
	return false
}

// ErrNoCPUFreq says the kernel exposes no cpufreq interface (typical in
// containers and virtual machines).
var ErrNoCPUFreq = errors.New("cpufreq not present")

func cpuDir(cpu int) string { return fmt.Sprintf("%s/cpu%d", CPURoot, cpu) }

func cpufreqFile(cpu int, name string) string {
	return fmt.Sprintf("%s/cpu%d/cpufreq/%s", CPURoot, cpu, name)
}

// ParseCPUList parses a kernel CPU list such as "0-3,6".
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	var out []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

func readInt(ctx context.Context, f Files, p string) (int, error) {
	s, err := f.ReadFile(ctx, p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: not a number: %q", p, strings.TrimSpace(s))
	}
	return v, nil
}

// Discover finds the clusters and controls a device exposes. It fails with
// an error wrapping ErrNoCPUFreq when there is no cpufreq interface.
func Discover(ctx context.Context, f Files, svc Services) (Layout, error) {
	var l Layout
	present, err := f.ReadFile(ctx, CPURoot+"/present")
	if err != nil {
		return l, fmt.Errorf("%w: cannot read %s/present: %v", ErrNoCPUFreq, CPURoot, err)
	}
	cpus, err := ParseCPUList(present)
	if err != nil {
		return l, err
	}
	seen := map[int]bool{}
	for _, cpu := range cpus {
		if seen[cpu] {
			continue
		}
		rel, err := f.ReadFile(ctx, cpufreqFile(cpu, "related_cpus"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // offline or no cpufreq for this CPU
			}
			return l, err
		}
		members, err := ParseCPUList(strings.ReplaceAll(strings.TrimSpace(rel), " ", ","))
		if err != nil {
			return l, fmt.Errorf("%s: %v", cpufreqFile(cpu, "related_cpus"), err)
		}
		if len(members) == 0 {
			members = []int{cpu}
		}
		c := Cluster{CPUs: members}
		for _, m := range members {
			seen[m] = true
		}
		if s, err := f.ReadFile(ctx, cpufreqFile(cpu, "scaling_available_governors")); err == nil {
			c.Governors = strings.Fields(s)
		}
		if s, err := f.ReadFile(ctx, cpufreqFile(cpu, "scaling_available_frequencies")); err == nil {
			for _, w := range strings.Fields(s) {
				if v, err := strconv.Atoi(w); err == nil {
					c.Frequencies = append(c.Frequencies, v)
				}
			}
		}
		if len(c.Frequencies) == 0 {
			lo, err1 := readInt(ctx, f, cpufreqFile(cpu, "cpuinfo_min_freq"))
			hi, err2 := readInt(ctx, f, cpufreqFile(cpu, "cpuinfo_max_freq"))
			if err1 == nil && err2 == nil {
				c.Frequencies = []int{lo, hi}
			}
		}
		sort.Ints(c.Frequencies)
		l.Clusters = append(l.Clusters, c)
	}
	if len(l.Clusters) == 0 {
		return l, fmt.Errorf("%w: no %s/cpuN/cpufreq directories", ErrNoCPUFreq, CPURoot)
	}
	if _, err := f.ReadFile(ctx, KGSLPath+"/devfreq/governor"); err == nil {
		l.GPU = KGSLPath
		s, err := f.ReadFile(ctx, KGSLPath+"/devfreq/available_frequencies")
		if err != nil {
			s, _ = f.ReadFile(ctx, KGSLPath+"/gpu_available_frequencies")
		}
		for _, w := range strings.Fields(s) {
			if v, err := strconv.ParseInt(w, 10, 64); err == nil {
				l.GPUFreqsHz = append(l.GPUFreqsHz, v)
			}
		}
		sort.Slice(l.GPUFreqsHz, func(i, j int) bool { return l.GPUFreqsHz[i] < l.GPUFreqsHz[j] })
		if s, err := f.ReadFile(ctx, KGSLPath+"/devfreq/available_governors"); err == nil {
			l.GPUGovs = strings.Fields(s)
		}
	}
	if _, err := f.ReadFile(ctx, ThermalCorePath); err == nil {
		l.ThermalCore = true
	}
	if _, err := f.ReadFile(ctx, InputBoostPath); err == nil {
		l.InputBoost = true
	}
	if svc != nil {
		if _, err := svc.ServiceRunning(ctx, MPDecision); err == nil {
			l.MPDecision = true
		}
	}
	return l, nil
}

// Read reads the current settings of every control in the layout.
func Read(ctx context.Context, f Files, svc Services, l Layout) (lab.GovernorProfile, error) {
	var p lab.GovernorProfile
	for _, c := range l.Clusters {
		cpu := c.CPUs[0]
		g, err := f.ReadFile(ctx, cpufreqFile(cpu, "scaling_governor"))
		if err != nil {
			return p, err
		}
		lo, err := readInt(ctx, f, cpufreqFile(cpu, "scaling_min_freq"))
		if err != nil {
			return p, err
		}
		hi, err := readInt(ctx, f, cpufreqFile(cpu, "scaling_max_freq"))
		if err != nil {
			return p, err
		}
		p.Clusters = append(p.Clusters, lab.ClusterSetting{
			CPUs: append([]int(nil), c.CPUs...), Governor: strings.TrimSpace(g), MinKHz: lo, MaxKHz: hi,
		})
	}
	if l.GPU != "" {
		g, err := f.ReadFile(ctx, l.GPU+"/devfreq/governor")
		if err != nil {
			return p, err
		}
		lo, err := readInt(ctx, f, l.GPU+"/devfreq/min_freq")
		if err != nil {
			return p, err
		}
		hi, err := readInt(ctx, f, l.GPU+"/max_gpuclk")
		if err != nil {
			return p, err
		}
		p.GPU = &lab.GPUSetting{Governor: strings.TrimSpace(g), MinHz: int64(lo), MaxHz: int64(hi)}
	}
	if l.ThermalCore {
		v, err := readInt(ctx, f, ThermalCorePath)
		if err != nil {
			return p, err
		}
		b := v != 0
		p.ThermalCore = &b
	}
	if l.InputBoost {
		v, err := readInt(ctx, f, InputBoostPath)
		if err != nil {
			return p, err
		}
		p.InputBoost = &v
	}
	if l.MPDecision && svc != nil {
		run, err := svc.ServiceRunning(ctx, MPDecision)
		if err != nil {
			return p, err
		}
		p.MPDecision = &run
	}
	return p, nil
}

// Apply writes profile p, then reads every written file back. It returns one
// mismatch line ("PATH: wrote X, read back Y") per file whose read-back
// differs. Controls the profile leaves unset are not touched; controls the
// device lacks are an error naming them, so a profile meant for another model
// is not half-applied silently.
func Apply(ctx context.Context, f Files, svc Services, l Layout, p lab.GovernorProfile) ([]string, error) {
	if err := Validate(l, p); err != nil {
		return nil, err
	}
	w := &profileWriter{ctx: ctx, f: f}
	var mism []string
	// mpdecision hot-plugs cores behind our back: stop it first.
	if p.MPDecision != nil && svc != nil {
		m, err := applyMPDecision(ctx, svc, *p.MPDecision)
		if err != nil {
			return nil, err
		}
		mism = append(mism, m...)
	}
	if p.ThermalCore != nil {
		if err := w.write(ThermalCorePath, boolStr(*p.ThermalCore)); err != nil {
			return nil, err
		}
	}
	if p.InputBoost != nil {
		if err := w.write(InputBoostPath, strconv.Itoa(*p.InputBoost)); err != nil {
			return nil, err
		}
	}
	for _, cs := range p.Clusters {
		if err := w.cluster(cs); err != nil {
			return nil, err
		}
	}
	if p.GPU != nil {
		if err := w.gpu(l.GPU, *p.GPU); err != nil {
			return nil, err
		}
	}
	return append(mism, w.readBack()...), nil
}

// applyMPDecision starts or stops mpdecision and says whether it is not
// in the state wanted.
func applyMPDecision(ctx context.Context, svc Services, want bool) ([]string, error) {
	if err := svc.SetService(ctx, MPDecision, want); err != nil {
		return nil, err
	}
	run, err := svc.ServiceRunning(ctx, MPDecision)
	if err != nil {
		return nil, err
	}
	if run != want {
		return []string{fmt.Sprintf("service %s: wanted running=%t, is running=%t", MPDecision, want, run)}, nil
	}
	return nil, nil
}

// profileWriter writes a profile's files and remembers what it wrote, to
// read it back.
type profileWriter struct {
	ctx    context.Context
	f      Files
	writes []profileWrite
}

// profileWrite is one value written to one kernel file.
type profileWrite struct{ path, value string }

func (w *profileWriter) write(p, v string) error {
	if err := w.f.WriteFile(w.ctx, p, v); err != nil {
		return err
	}
	w.writes = append(w.writes, profileWrite{p, v})
	return nil
}

// cluster sets a cluster's policy through each of its CPUs that is (or can
// be brought) online; an error when none can take it.
func (w *profileWriter) cluster(cs lab.ClusterSetting) error {
	wrote := false
	for _, cpu := range cs.CPUs {
		// Bring the core online so its cpufreq files accept writes. A
		// hot-plug daemon may keep it offline; the cluster's shared
		// policy is then set through its online CPUs.
		if cpu != 0 {
			if s, err := w.f.ReadFile(w.ctx, cpuDir(cpu)+"/online"); err == nil && strings.TrimSpace(s) == "0" {
				_ = w.f.WriteFile(w.ctx, cpuDir(cpu)+"/online", "1")
			}
		}
		if _, err := w.f.ReadFile(w.ctx, cpufreqFile(cpu, "scaling_governor")); errors.Is(err, fs.ErrNotExist) {
			if cpu == cs.CPUs[len(cs.CPUs)-1] && !wrote {
				return fmt.Errorf("no CPU of %v is online to take the setting: %w", cs.CPUs, err)
			}
			continue
		}
		wrote = true
		if err := w.cpu(cpu, cs); err != nil {
			return err
		}
	}
	return nil
}

// cpu writes the cluster's governor, frequency bounds (ordered so the
// policy never has min > max) and userspace speed through cpu's files.
func (w *profileWriter) cpu(cpu int, cs lab.ClusterSetting) error {
	if cs.Governor != "" {
		if err := w.write(cpufreqFile(cpu, "scaling_governor"), cs.Governor); err != nil {
			return err
		}
	}
	curMax, _ := readInt(w.ctx, w.f, cpufreqFile(cpu, "scaling_max_freq"))
	order := []struct {
		name string
		v    int
	}{{"scaling_min_freq", cs.MinKHz}, {"scaling_max_freq", cs.MaxKHz}}
	if cs.MinKHz > curMax {
		order[0], order[1] = order[1], order[0]
	}
	for _, o := range order {
		if o.v > 0 {
			if err := w.write(cpufreqFile(cpu, o.name), strconv.Itoa(o.v)); err != nil {
				return err
			}
		}
	}
	if cs.Governor == "userspace" && cs.MaxKHz > 0 {
		return w.write(cpufreqFile(cpu, "scaling_setspeed"), strconv.Itoa(cs.MaxKHz))
	}
	return nil
}

// gpu writes the GPU's governor and clock bounds under dir.
func (w *profileWriter) gpu(dir string, g lab.GPUSetting) error {
	if g.Governor != "" {
		if err := w.write(dir+"/devfreq/governor", g.Governor); err != nil {
			return err
		}
	}
	if g.MaxHz > 0 {
		if err := w.write(dir+"/max_gpuclk", strconv.FormatInt(g.MaxHz, 10)); err != nil {
			return err
		}
	}
	if g.MinHz > 0 {
		return w.write(dir+"/devfreq/min_freq", strconv.FormatInt(g.MinHz, 10))
	}
	return nil
}

// readBack reads back the last value written to each file, in the order
// first written, and returns a line for each that differs.
func (w *profileWriter) readBack() []string {
	last := map[string]string{}
	var paths []string
	for _, x := range w.writes {
		if _, ok := last[x.path]; !ok {
			paths = append(paths, x.path)
		}
		last[x.path] = x.value
	}
	var mism []string
	for _, p := range paths {
		got, err := w.f.ReadFile(w.ctx, p)
		if err != nil {
			mism = append(mism, fmt.Sprintf("%s: wrote %s, read back failed: %v", p, last[p], err))
			continue
		}
		if strings.TrimSpace(got) != last[p] {
			mism = append(mism, fmt.Sprintf("%s: wrote %s, read back %s", p, last[p], strings.TrimSpace(got)))
		}
	}
	return mism
}

// Validate checks that p only names controls and CPUs the layout has, and
// frequencies within each cluster's range.
func Validate(l Layout, p lab.GovernorProfile) error {
	cluster := map[int]Cluster{}
	for _, c := range l.Clusters {
		for _, cpu := range c.CPUs {
			cluster[cpu] = c
		}
	}
	for i, cs := range p.Clusters {
		if len(cs.CPUs) == 0 {
			return fmt.Errorf("profile %q: clusters[%d].cpus is empty", p.Name, i)
		}
		for _, cpu := range cs.CPUs {
			c, ok := cluster[cpu]
			if !ok {
				return fmt.Errorf("profile %q: clusters[%d]: this device has no cpufreq CPU %d", p.Name, i, cpu)
			}
			if cs.Governor != "" && len(c.Governors) > 0 && !c.HasGovernor(cs.Governor) {
				return fmt.Errorf("profile %q: clusters[%d].governor %q not available on CPU %d (available: %s)",
					p.Name, i, cs.Governor, cpu, strings.Join(c.Governors, " "))
			}
			if n := len(c.Frequencies); n > 0 {
				lo, hi := c.Frequencies[0], c.Frequencies[n-1]
				for _, v := range []int{cs.MinKHz, cs.MaxKHz} {
					if v != 0 && (v < lo || v > hi) {
						return fmt.Errorf("profile %q: clusters[%d]: %d kHz outside CPU %d's range %d–%d kHz", p.Name, i, v, cpu, lo, hi)
					}
				}
			}
		}
		if cs.MinKHz != 0 && cs.MaxKHz != 0 && cs.MinKHz > cs.MaxKHz {
			return fmt.Errorf("profile %q: clusters[%d]: min_khz %d above max_khz %d", p.Name, i, cs.MinKHz, cs.MaxKHz)
		}
	}
	if p.GPU != nil && l.GPU == "" {
		return fmt.Errorf("profile %q sets the GPU, but this device has no kgsl GPU at %s", p.Name, KGSLPath)
	}
	if p.ThermalCore != nil && !l.ThermalCore {
		return fmt.Errorf("profile %q sets thermal core control, but %s does not exist", p.Name, ThermalCorePath)
	}
	if p.InputBoost != nil && !l.InputBoost {
		return fmt.Errorf("profile %q sets input boost, but %s does not exist", p.Name, InputBoostPath)
	}
	if p.MPDecision != nil && !l.MPDecision {
		return fmt.Errorf("profile %q sets mpdecision, but this device has no mpdecision service", p.Name)
	}
	return nil
}

func boolStr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// DescribeCPU renders only the clusters of a profile, e.g.
// "cpu0-3 performance 1728 MHz · cpu4-7 schedutil 825–1996 MHz".
func DescribeCPU(p lab.GovernorProfile) string {
	return Describe(lab.GovernorProfile{Clusters: p.Clusters})
}

// Describe renders a profile in one line, e.g.
// "cpu0-3 performance 1728000 kHz · gpu 300 MHz · thermal off · boost 0 · mpdecision off".
func Describe(p lab.GovernorProfile) string {
	var parts []string
	for _, c := range p.Clusters {
		name := "cpu" + cpuRange(c.CPUs)
		switch {
		case c.MinKHz != 0 && c.MinKHz == c.MaxKHz:
			parts = append(parts, fmt.Sprintf("%s %s %d MHz", name, c.Governor, c.MaxKHz/1000))
		case c.MaxKHz != 0 || c.MinKHz != 0:
			parts = append(parts, fmt.Sprintf("%s %s %d–%d MHz", name, c.Governor, c.MinKHz/1000, c.MaxKHz/1000))
		default:
			parts = append(parts, fmt.Sprintf("%s %s", name, c.Governor))
		}
	}
	if p.GPU != nil {
		g := p.GPU
		if g.MinHz != 0 && g.MinHz == g.MaxHz {
			parts = append(parts, fmt.Sprintf("gpu %s %d MHz", g.Governor, g.MaxHz/1000000))
		} else {
			parts = append(parts, fmt.Sprintf("gpu %s %d–%d MHz", g.Governor, g.MinHz/1000000, g.MaxHz/1000000))
		}
	}
	if p.ThermalCore != nil {
		parts = append(parts, "thermal core control "+onOff(*p.ThermalCore))
	}
	if p.InputBoost != nil {
		parts = append(parts, fmt.Sprintf("input boost %d", *p.InputBoost))
	}
	if p.MPDecision != nil {
		parts = append(parts, "mpdecision "+onOff(*p.MPDecision))
	}
	if len(parts) == 0 {
		return "(empty profile)"
	}
	return strings.Join(parts, " · ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func cpuRange(cpus []int) string {
	if len(cpus) == 0 {
		return ""
	}
	s := append([]int(nil), cpus...)
	sort.Ints(s)
	if s[len(s)-1]-s[0] == len(s)-1 && len(s) > 1 {
		return fmt.Sprintf("%d-%d", s[0], s[len(s)-1])
	}
	var b []string
	for _, c := range s {
		b = append(b, strconv.Itoa(c))
	}
	return strings.Join(b, ",")
}
