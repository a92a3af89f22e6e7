package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/perflab/perflab/lab"
)

// Preset is one phone model: its CPU clusters, GPU, thermal behaviour and
// stock settings. Presets are values; New copies what it needs.
type Preset struct {
	Name        string // preset name, as in "sim:<name>"
	Model       string // ro.product.model
	Product     string // ro.product.name / ro.product.device
	Description string
	ABI         string // ro.product.cpu.abi
	SDK         int    // ro.build.version.sdk
	Clusters    []ClusterSpec
	GPU         GPUSpec
	Thermal     ThermalSpec
	// InputBoostKHz is the stock input_boost_freq.
	InputBoostKHz int
	// EMMCReadMBps is the storage read throughput for cold page-cache reads.
	EMMCReadMBps float64
}

// ClusterSpec describes CPUs that share one frequency policy.
type ClusterSpec struct {
	Name          string
	CPUs          []int
	FreqsKHz      []int // ascending
	Governors     []string
	StockGovernor string
	// FlopsPerCycle is the modelled throughput of the MFLOPS probe (a gonum
	// matrix multiply) per core per cycle.
	FlopsPerCycle float64
	// IPC is the app code's speed per cycle relative to the fastest core.
	IPC float64
	// PeakWatts is one busy core's power at the top frequency; power scales
	// with f·V(f)², V linear in frequency from VMin to VMax.
	PeakWatts  float64
	VMin, VMax float64
}

// GPUSpec describes the kgsl GPU.
type GPUSpec struct {
	Dir           string  // real sysfs directory; /sys/class/kgsl/kgsl-3d0 links here
	FreqsHz       []int64 // ascending power levels
	Governors     []string
	StockGovernor string
	PeakWatts     float64 // power at the top level while idle-clocked (the probe does not load the GPU)
}

// ThermalSpec is a first-order thermal model: temperature approaches
// AmbientC + ResistanceCPerW·power with time constant TimeConstantS.
type ThermalSpec struct {
	AmbientC        float64
	ResistanceCPerW float64
	TimeConstantS   float64
	// JunctionCPerW is the part of ResistanceCPerW between die and package:
	// the die reacts to a frequency change within a second.
	JunctionCPerW float64
	StaticWatts   float64 // SoC power that does not depend on CPU frequency
	// TripC is msm_thermal's frequency-mitigation limit, always active: above
	// it the CPU frequency cap steps down each poll, below TripC-HysteresisC
	// it steps back up.
	TripC       float64
	HysteresisC float64
	// CoreTripC is where core control (when enabled) takes big cores offline.
	CoreTripC float64
}

// Presets returns the built-in phone models, by name.
func Presets() []Preset {
	return []Preset{nexus5(), pixel(), pixel4()}
}

// PresetNames lists the preset names, sorted.
func PresetNames() []string {
	var n []string
	for _, p := range Presets() {
		n = append(n, p.Name)
	}
	sort.Strings(n)
	return n
}

// Lookup returns the preset called name.
func Lookup(name string) (Preset, error) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("no sim preset %q (have: %s)", name, strings.Join(PresetNames(), ", "))
}

func nexus5() Preset {
	return Preset{
		Name:        "nexus5",
		Model:       "Nexus 5",
		Product:     "hammerhead",
		Description: "2013 quad-core (Snapdragon 800, Krait 400, Adreno 330), interactive governor, mpdecision",
		ABI:         "armeabi-v7a",
		SDK:         23,
		Clusters: []ClusterSpec{{
			Name: "krait", CPUs: []int{0, 1, 2, 3},
			FreqsKHz: []int{300000, 422400, 652800, 729600, 883200, 960000, 1036800, 1190400,
				1267200, 1497600, 1574400, 1728000, 1958400, 2265600},
			Governors:     []string{"interactive", "ondemand", "userspace", "powersave", "performance"},
			StockGovernor: "interactive",
			FlopsPerCycle: 0.55, IPC: 1,
			PeakWatts: 1.1, VMin: 0.75, VMax: 1.1,
		}},
		GPU: GPUSpec{
			Dir:       "/sys/devices/fdb00000.qcom,kgsl-3d0/kgsl/kgsl-3d0",
			FreqsHz:   []int64{200000000, 320000000, 450000000, 578000000},
			Governors: []string{"msm-adreno-tz", "performance", "powersave", "userspace"}, StockGovernor: "msm-adreno-tz",
			PeakWatts: 0.35,
		},
		Thermal: ThermalSpec{AmbientC: 25, ResistanceCPerW: 12, TimeConstantS: 50, JunctionCPerW: 3, StaticWatts: 0.25,
			TripC: 65, HysteresisC: 5, CoreTripC: 75},
		InputBoostKHz: 1497600,
		EMMCReadMBps:  60,
	}
}

func pixel() Preset {
	return Preset{
		Name:        "pixel",
		Model:       "Pixel 3",
		Product:     "blueline",
		Description: "2018 big.LITTLE octa-core (Snapdragon 845: 4 little + 4 big, Adreno 630), schedutil",
		ABI:         "arm64-v8a",
		SDK:         29,
		Clusters: []ClusterSpec{{
			Name: "little", CPUs: []int{0, 1, 2, 3},
			FreqsKHz: []int{300000, 403200, 480000, 576000, 652800, 748800, 825600, 902400, 979200,
				1056000, 1132800, 1228800, 1324800, 1420800, 1516800, 1612800, 1689600, 1766400},
			Governors:     []string{"schedutil", "userspace", "powersave", "performance"},
			StockGovernor: "schedutil",
			FlopsPerCycle: 0.45, IPC: 0.45,
			PeakWatts: 0.25, VMin: 0.55, VMax: 0.9,
		}, {
			Name: "big", CPUs: []int{4, 5, 6, 7},
			FreqsKHz: []int{825600, 902400, 979200, 1056000, 1209600, 1286400, 1363200, 1459200, 1536000,
				1612800, 1689600, 1766400, 1843200, 1920000, 1996800, 2092800, 2169600, 2246400, 2323200,
				2400000, 2476800, 2553600, 2649600, 2803200},
			Governors:     []string{"schedutil", "userspace", "powersave", "performance"},
			StockGovernor: "schedutil",
			FlopsPerCycle: 0.9, IPC: 1,
			PeakWatts: 1.6, VMin: 0.6, VMax: 1.05,
		}},
		GPU: GPUSpec{
			Dir:       "/sys/devices/platform/soc/5000000.qcom,kgsl-3d0/kgsl/kgsl-3d0",
			FreqsHz:   []int64{257000000, 342000000, 414000000, 520000000, 596000000, 675000000, 710000000},
			Governors: []string{"msm-adreno-tz", "performance", "powersave", "userspace"}, StockGovernor: "msm-adreno-tz",
			PeakWatts: 0.5,
		},
		Thermal: ThermalSpec{AmbientC: 25, ResistanceCPerW: 11, TimeConstantS: 60, JunctionCPerW: 3, StaticWatts: 0.3,
			TripC: 70, HysteresisC: 4, CoreTripC: 80},
		InputBoostKHz: 1324800,
		EMMCReadMBps:  70,
	}
}

func pixel4() Preset {
	return Preset{
		Name:        "pixel4",
		Model:       "Pixel 4",
		Product:     "flame",
		Description: "2019 tri-cluster octa-core (Snapdragon 855: 4 little + 3 mid + 1 prime, Adreno 640), schedutil",
		ABI:         "arm64-v8a",
		SDK:         30,
		Clusters: []ClusterSpec{{
			Name: "little", CPUs: []int{0, 1, 2, 3},
			FreqsKHz: []int{300000, 403200, 499200, 576000, 672000, 768000, 844800, 940800, 1036800,
				1113600, 1209600, 1305600, 1382400, 1478400, 1555200, 1632000, 1708800, 1785600},
			Governors:     []string{"schedutil", "userspace", "powersave", "performance"},
			StockGovernor: "schedutil",
			FlopsPerCycle: 0.45, IPC: 0.45,
			PeakWatts: 0.22, VMin: 0.55, VMax: 0.88,
		}, {
			Name: "mid", CPUs: []int{4, 5, 6},
			FreqsKHz: []int{710400, 825600, 940800, 1056000, 1171200, 1286400, 1401600, 1497600, 1612800,
				1708800, 1804800, 1920000, 2016000, 2131200, 2227200, 2323200, 2419200},
			Governors:     []string{"schedutil", "userspace", "powersave", "performance"},
			StockGovernor: "schedutil",
			FlopsPerCycle: 1.0, IPC: 0.95,
			PeakWatts: 1.2, VMin: 0.6, VMax: 1.0,
		}, {
			Name: "prime", CPUs: []int{7},
			FreqsKHz: []int{825600, 940800, 1056000, 1171200, 1286400, 1401600, 1497600, 1612800, 1708800,
				1804800, 1920000, 2016000, 2131200, 2227200, 2323200, 2419200, 2534400, 2649600, 2745600, 2841600},
			Governors:     []string{"schedutil", "userspace", "powersave", "performance"},
			StockGovernor: "schedutil",
			FlopsPerCycle: 1.0, IPC: 1,
			PeakWatts: 1.8, VMin: 0.6, VMax: 1.1,
		}},
		GPU: GPUSpec{
			Dir:       "/sys/devices/platform/soc/2c00000.qcom,kgsl-3d0/kgsl/kgsl-3d0",
			FreqsHz:   []int64{257000000, 345000000, 427000000, 499200000, 585000000},
			Governors: []string{"msm-adreno-tz", "performance", "powersave", "userspace"}, StockGovernor: "msm-adreno-tz",
			PeakWatts: 0.45,
		},
		Thermal: ThermalSpec{AmbientC: 25, ResistanceCPerW: 10.5, TimeConstantS: 70, JunctionCPerW: 3,
			StaticWatts: 0.3, TripC: 72, HysteresisC: 4, CoreTripC: 82},
		InputBoostKHz: 1209600,
		EMMCReadMBps:  80,
	}
}

// CorePowerW is the power of one busy core of cluster c at f kHz.
func (c ClusterSpec) CorePowerW(fKHz int) float64 {
	lo, hi := float64(c.FreqsKHz[0]), float64(c.FreqsKHz[len(c.FreqsKHz)-1])
	f := float64(fKHz)
	v := c.VMax
	if hi > lo {
		v = c.VMin + (c.VMax-c.VMin)*(f-lo)/(hi-lo)
	}
	return c.PeakWatts * (f / hi) * (v / c.VMax) * (v / c.VMax)
}

// MaxKHz is the cluster's top frequency.
func (c ClusterSpec) MaxKHz() int { return c.FreqsKHz[len(c.FreqsKHz)-1] }

// gpuPowerW is the GPU's power clocked at hz with no work.
func (g GPUSpec) gpuPowerW(hz int64) float64 {
	top := float64(g.FreqsHz[len(g.FreqsHz)-1])
	r := float64(hz) / top
	return g.PeakWatts * r * r
}

// LeakagePerC is how much a busy core's power grows per °C above 40 °C:
// hotter silicon leaks more, so a lock near the limit creeps upwards.
const LeakagePerC = 0.008

func leakage(tempC float64) float64 { return 1 + LeakagePerC*(tempC-40) }

// SteadyTempC is the temperature the model settles at with every core of
// each cluster busy at freqs[i] kHz and the GPU clocked at gpuHz: the
// MFLOPS probe's load. A setting is sustainable when this is below
// Thermal.TripC.
func (p Preset) SteadyTempC(freqs []int, gpuHz int64) float64 {
	s := p.Thermal.StaticWatts + p.GPU.gpuPowerW(gpuHz)
	var d float64 // busy cores' power at 40 °C
	for i, c := range p.Clusters {
		s += 0.02 * float64(len(c.CPUs))
		d += float64(len(c.CPUs)) * c.CorePowerW(freqs[i])
	}
	// T = A + R·(S + D·(1 + k·(T-40))), solved for T.
	r, k := p.Thermal.ResistanceCPerW, LeakagePerC
	den := 1 - r*d*k
	if den <= 0 {
		return math.Inf(1) // thermal runaway
	}
	return (p.Thermal.AmbientC + r*s + r*d*(1-40*k)) / den
}

// ModelMFLOPS is the probe throughput with every core busy at freqs[i].
func (p Preset) ModelMFLOPS(freqs []int) float64 {
	var m float64
	for i, c := range p.Clusters {
		m += float64(len(c.CPUs)) * float64(freqs[i]) / 1000 * c.FlopsPerCycle
	}
	return m
}

// Sustainable returns, per cluster, the frequencies that maximise the
// modelled MFLOPS while keeping SteadyTempC at least marginC below the trip
// point, with the GPU at lockGPUHz. It is the model's ground truth for
// what `perflab tune` should find.
func (p Preset) Sustainable(marginC float64) []int {
	best := make([]int, len(p.Clusters))
	cur := make([]int, len(p.Clusters))
	bestM := -1.0
	gpu := p.LockGPUHz()
	var walk func(i int)
	walk = func(i int) {
		if i == len(p.Clusters) {
			if p.SteadyTempC(cur, gpu) <= p.Thermal.TripC-marginC {
				if m := p.ModelMFLOPS(cur); m > bestM {
					bestM = m
					copy(best, cur)
				}
			}
			return
		}
		for _, f := range p.Clusters[i].FreqsKHz {
			cur[i] = f
			walk(i + 1)
		}
	}
	walk(0)
	return best
}

// LockGPUHz is the GPU level profiles lock to: the lowest level at or above
// 40% of the top clock (MobileLab locked a mid-low 300 MHz).
func (p Preset) LockGPUHz() int64 {
	top := p.GPU.FreqsHz[len(p.GPU.FreqsHz)-1]
	for _, f := range p.GPU.FreqsHz {
		if float64(f) >= 0.4*float64(top) {
			return f
		}
	}
	return top
}

// LockedProfile builds a MobileLab-style profile: every cluster on the
// performance governor with min = max = freqs[i], the GPU locked at
// LockGPUHz, thermal core control, input boost and mpdecision off.
func (p Preset) LockedProfile(name string, freqs []int) lab.GovernorProfile {
	off, zero := false, 0
	g := p.LockGPUHz()
	prof := lab.GovernorProfile{Name: name, ThermalCore: &off, InputBoost: &zero, MPDecision: &off,
		GPU: &lab.GPUSetting{Governor: "performance", MinHz: g, MaxHz: g}}
	for i, c := range p.Clusters {
		prof.Clusters = append(prof.Clusters, lab.ClusterSetting{
			CPUs: append([]int(nil), c.CPUs...), Governor: "performance", MinKHz: freqs[i], MaxKHz: freqs[i]})
	}
	return prof
}

// Recommended is the built-in sustainable profile (3 °C below the trip
// point), used for controls.governor "recommended" until `perflab tune`
// has saved one for the model.
func (p Preset) Recommended() lab.GovernorProfile {
	return p.LockedProfile("recommended", p.Sustainable(3))
}

// StockProfile is the factory settings.
func (p Preset) StockProfile() lab.GovernorProfile {
	on, boost := true, p.InputBoostKHz
	prof := lab.GovernorProfile{Name: "stock", ThermalCore: &on, InputBoost: &boost, MPDecision: &on,
		GPU: &lab.GPUSetting{Governor: p.GPU.StockGovernor, MinHz: p.GPU.FreqsHz[0], MaxHz: p.GPU.FreqsHz[len(p.GPU.FreqsHz)-1]}}
	for _, c := range p.Clusters {
		prof.Clusters = append(prof.Clusters, lab.ClusterSetting{
			CPUs: append([]int(nil), c.CPUs...), Governor: c.StockGovernor, MinKHz: c.FreqsKHz[0], MaxKHz: c.MaxKHz()})
	}
	return prof
}

// Builtin resolves the preset's named profiles ("recommended", "stock",
// "max" — every cluster locked at its top frequency, which throttles).
func (p Preset) Builtin(name string) (lab.GovernorProfile, bool) {
	switch name {
	case "recommended":
		return p.Recommended(), true
	case "stock":
		return p.StockProfile(), true
	case "max":
		var f []int
		for _, c := range p.Clusters {
			f = append(f, c.MaxKHz())
		}
		return p.LockedProfile("max", f), true
	}
	return lab.GovernorProfile{}, false
}

func roundToTable(table []int, v int, up bool) int {
	if up {
		for _, f := range table {
			if f >= v {
				return f
			}
		}
		return table[len(table)-1]
	}
	for i := len(table) - 1; i >= 0; i-- {
		if table[i] <= v {
			return table[i]
		}
	}
	return table[0]
}
