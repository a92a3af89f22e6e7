package sim

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/perflab/perflab/lab/governor"
)

// initSys registers the kernel files a phone of this preset exposes: the
// CPU lists, each CPU's online switch and cpufreq policy, the GPU's
// devfreq and kgsl files, the kernel's tuning knobs, and /proc.
func (ph *Phone) initSys() {
	var all []int
	for _, c := range ph.clusters {
		all = append(all, c.spec.CPUs...)
	}
	cpuList := fmt.Sprintf("0-%d\n", len(all)-1)
	ph.file(CPURoot+"/present", func() string { return cpuList }, nil)
	ph.file(CPURoot+"/possible", func() string { return cpuList }, nil)
	ph.file(CPURoot+"/online", func() string { return ph.onlineList() + "\n" }, nil)
	for _, c := range ph.clusters {
		for idx, cpu := range c.spec.CPUs {
			dir := fmt.Sprintf("%s/cpu%d", CPURoot, cpu)
			if cpu != 0 {
				ph.file(dir+"/online", func() string { return boolDigit(c.cpuOnline(idx)) + "\n" },
					func(v string) error { return ph.setCPUOnline(c, idx, v) })
			}
			ph.initCPUFreq(c, idx, dir+"/cpufreq")
			if idx == 0 {
				ph.links[fmt.Sprintf("%s/cpufreq/policy%d", CPURoot, cpu)] = dir + "/cpufreq"
			}
		}
	}
	ph.initGPU()
	ph.initKnobs()
	ph.initProc()
}

// Modes of the simulated kernel files.
const (
	modeRO = fs.FileMode(0o444)
	modeRW = fs.FileMode(0o644)
)

// file registers the kernel file p: read-only when write is nil.
func (ph *Phone) file(p string, read func() string, write func(string) error) {
	mode := modeRO
	if write != nil {
		mode = modeRW
	}
	ph.sys[p] = &vfile{read: read, write: write, mode: mode}
}

// setCPUOnline writes the online switch of cluster c's CPU idx. A CPU
// brought up comes down again at once under mpdecision, and one held by
// thermal core control refuses.
func (ph *Phone) setCPUOnline(c *clusterState, idx int, v string) error {
	switch v {
	case "0":
		c.online[idx] = false
	case "1":
		c.online[idx] = true
		if c.mpOff && ph.services["mpdecision"] {
			return nil // mpdecision takes it down again at once
		}
		if idx >= len(c.online)-c.coreOff {
			return fmt.Errorf("core held offline by thermal core control: %w", errBusy)
		}
	default:
		return errInvalid
	}
	return nil
}

// initCPUFreq registers the cpufreq policy files of cluster c's CPU idx
// under fd, which exist while the CPU is online.
func (ph *Phone) initCPUFreq(c *clusterState, idx int, fd string) {
	onl := func() bool { return c.cpuOnline(idx) }
	reg := func(name string, read func() string, write func(string) error) {
		mode := modeRO
		if write != nil {
			mode = modeRW
		}
		ph.sys[fd+"/"+name] = &vfile{mode: mode, read: read, write: write, exists: onl}
	}
	reg("scaling_governor", func() string { return c.governor + "\n" }, c.setGovernor)
	reg("scaling_available_governors", func() string { return strings.Join(c.spec.Governors, " ") + "\n" }, nil)
	reg("scaling_available_frequencies", func() string { return joinInts(c.spec.FreqsKHz) + " \n" }, nil)
	reg("scaling_min_freq", func() string { return strconv.Itoa(c.minKHz) + "\n" }, c.setMinFreq)
	reg("scaling_max_freq", func() string { return ph.scalingMaxFreq(c) + "\n" }, c.setMaxFreq)
	reg("scaling_setspeed", c.readSetspeed, c.setSetspeed)
	reg("scaling_cur_freq", func() string { return strconv.Itoa(c.cur) + "\n" }, nil)
	reg("cpuinfo_cur_freq", func() string { return strconv.Itoa(c.cur) + "\n" }, nil)
	reg("cpuinfo_max_freq", func() string { return strconv.Itoa(c.spec.MaxKHz()) + "\n" }, nil)
	reg("cpuinfo_min_freq", func() string { return strconv.Itoa(c.spec.FreqsKHz[0]) + "\n" }, nil)
	reg("scaling_driver", func() string { return "msm\n" }, nil)
	reg("related_cpus", func() string { return joinInts(c.spec.CPUs) + "\n" }, nil)
	reg("affected_cpus", func() string { return joinInts(c.onlineCPUs()) + "\n" }, nil)
}

// setGovernor sets the cluster's governor, one of its preset's; userspace
// starts at the current frequency.
func (c *clusterState) setGovernor(v string) error {
	for _, g := range c.spec.Governors {
		if g == v {
			c.governor = v
			if v == "userspace" && c.setspeed == 0 {
				c.setspeed = c.cur
			}
			return nil
		}
	}
	return errInvalid
}

// setMinFreq sets the policy minimum; old kernels refuse it above the
// maximum.
func (c *clusterState) setMinFreq(v string) error {
	f, err := c.parseFreq(v)
	if err != nil {
		return err
	}
	if f > c.maxKHz {
		return errInvalid
	}
	c.minKHz = f
	return nil
}

// setMaxFreq sets the policy maximum, not below the minimum.
func (c *clusterState) setMaxFreq(v string) error {
	f, err := c.parseFreq(v)
	if err != nil {
		return err
	}
	if f < c.minKHz {
		return errInvalid
	}
	c.maxKHz = f
	return nil
}

// scalingMaxFreq is the policy maximum as read: msm_thermal rewrites it
// while it throttles.
func (ph *Phone) scalingMaxFreq(c *clusterState) string {
	if ph.thermalCore && c.capIdx < len(c.spec.FreqsKHz)-1 && c.spec.FreqsKHz[c.capIdx] < c.maxKHz {
		return strconv.Itoa(c.spec.FreqsKHz[c.capIdx])
	}
	return strconv.Itoa(c.maxKHz)
}

// readSetspeed and setSetspeed are scaling_setspeed, which only the
// userspace governor supports.
func (c *clusterState) readSetspeed() string {
	if c.governor != "userspace" {
		return "<unsupported>\n"
	}
	return strconv.Itoa(c.setspeed) + "\n"
}

func (c *clusterState) setSetspeed(v string) error {
	if c.governor != "userspace" {
		return errInvalid
	}
	f, err := c.parseFreq(v)
	if err != nil {
		return err
	}
	c.setspeed = f
	return nil
}

// onlineCPUs lists the cluster's CPUs that are online.
func (c *clusterState) onlineCPUs() []int {
	var on []int
	for i, cpu := range c.spec.CPUs {
		if c.cpuOnline(i) {
			on = append(on, cpu)
		}
	}
	return on
}

// initGPU registers the GPU's devfreq and kgsl files.
func (ph *Phone) initGPU() {
	g := ph.preset.GPU
	ph.file(g.Dir+"/devfreq/governor", func() string { return ph.gpu.governor + "\n" }, func(v string) error {
		for _, x := range g.Governors {
			if x == v {
				ph.gpu.governor = v
				return nil
			}
		}
		return errInvalid
	})
	ph.file(g.Dir+"/devfreq/available_governors", func() string { return strings.Join(g.Governors, " ") + "\n" }, nil)
	ph.file(g.Dir+"/devfreq/available_frequencies", func() string { return joinInt64s(g.FreqsHz) + "\n" }, nil)
	ph.file(g.Dir+"/gpu_available_frequencies", func() string { return joinInt64s(g.FreqsHz) + "\n" }, nil)
	ph.file(g.Dir+"/devfreq/min_freq", func() string { return strconv.FormatInt(ph.gpu.minHz, 10) + "\n" }, func(v string) error {
		f, err := strconv.ParseInt(v, 10, 64)
		if err != nil || f <= 0 {
			return errInvalid
		}
		if f > ph.gpu.maxHz {
			f = ph.gpu.maxHz
		}
		ph.gpu.minHz = f
		return nil
	})
	ph.file(g.Dir+"/devfreq/max_freq", func() string { return strconv.FormatInt(ph.gpu.maxHz, 10) + "\n" }, nil)
	ph.file(g.Dir+"/devfreq/cur_freq", func() string { return strconv.FormatInt(ph.gpuClock(), 10) + "\n" }, nil)
	ph.file(g.Dir+"/gpuclk", func() string { return strconv.FormatInt(ph.gpuClock(), 10) + "\n" }, nil)
	ph.file(g.Dir+"/max_gpuclk", func() string { return strconv.FormatInt(ph.gpu.maxHz, 10) + "\n" }, ph.setGPUMax)
	ph.links[KGSLPath] = g.Dir
}

// setGPUMax sets kgsl's maximum clock: it snaps to the highest power
// level not above the request.
func (ph *Phone) setGPUMax(v string) error {
	f, err := strconv.ParseInt(v, 10, 64)
	if err != nil || f <= 0 {
		return errInvalid
	}
	g := ph.preset.GPU
	lvl := g.FreqsHz[0]
	for _, x := range g.FreqsHz {
		if x <= f {
			lvl = x
		}
	}
	ph.gpu.maxHz = lvl
	if ph.gpu.minHz > lvl {
		ph.gpu.minHz = lvl
	}
	return nil
}

// initKnobs registers the kernel's tuning knobs: thermal core control and
// the input boost.
func (ph *Phone) initKnobs() {
	ph.file(ThermalCorePath, func() string { return boolDigit(ph.thermalCore) + "\n" }, func(v string) error {
		switch strings.ToUpper(v) {
		case "0", "N":
			ph.thermalCore = false
		case "1", "Y":
			ph.thermalCore = true
		default:
			return errInvalid
		}
		return nil
	})
	ph.file(InputBoostPath, func() string { return strconv.Itoa(ph.inputBoost) + "\n" }, func(v string) error {
		f, err := strconv.Atoi(v)
		if err != nil || f < 0 {
			return errInvalid
		}
		ph.inputBoost = f
		return nil
	})
	ph.file("/sys/module/cpu_boost/parameters/input_boost_ms", func() string { return strconv.Itoa(ph.boostMS) + "\n" }, func(v string) error {
		f, err := strconv.Atoi(v)
		if err != nil || f < 0 {
			return errInvalid
		}
		ph.boostMS = f
		return nil
	})
}

// initProc registers the thermal zone, drop_caches, and /proc's uptime
// and cpuinfo.
func (ph *Phone) initProc() {
	ph.file("/sys/class/thermal/thermal_zone0/type", func() string { return "tsens_tz_sensor0\n" }, nil)
	ph.file("/sys/class/thermal/thermal_zone0/temp", func() string {
		return strconv.Itoa(int(ph.temp*1000)) + "\n"
	}, nil)
	ph.file("/proc/sys/vm/drop_caches", func() string { return ph.dropCaches + "\n" }, func(v string) error {
		switch v {
		case "1", "2", "3":
			ph.dropCaches = v
			if v != "2" {
				for _, a := range ph.apps {
					a.cached = 0
				}
			}
			ph.idle(0.3)
			return nil
		}
		return errInvalid
	})
	ph.file("/proc/uptime", func() string { return fmt.Sprintf("%.2f %.2f\n", ph.up, ph.up*0.9) }, nil)
	ph.file("/proc/cpuinfo", func() string {
		var b strings.Builder
		for _, c := range ph.clusters {
			for _, cpu := range c.spec.CPUs {
				fmt.Fprintf(&b, "processor\t: %d\nBogoMIPS\t: 38.40\n\n", cpu)
			}
		}
		fmt.Fprintf(&b, "Hardware\t: Qualcomm (perflab sim %s)\n", ph.preset.Name)
		return b.String()
	}, nil)
}

// Paths of the kernel files every preset has (the same as lab/governor's).
const (
	CPURoot         = governor.CPURoot
	KGSLPath        = governor.KGSLPath
	ThermalCorePath = governor.ThermalCorePath
	InputBoostPath  = governor.InputBoostPath
	DropCachesPath  = "/proc/sys/vm/drop_caches"
)

func (c *clusterState) parseFreq(v string) (int, error) {
	f, err := strconv.Atoi(v)
	if err != nil || f <= 0 {
		return 0, errInvalid
	}
	lo, hi := c.spec.FreqsKHz[0], c.spec.MaxKHz()
	if f < lo {
		f = lo
	}
	if f > hi {
		f = hi
	}
	return f, nil
}

func (ph *Phone) onlineList() string {
	var on []int
	for _, c := range ph.clusters {
		for i, cpu := range c.spec.CPUs {
			if c.cpuOnline(i) {
				on = append(on, cpu)
			}
		}
	}
	// compress into ranges
	var parts []string
	for i := 0; i < len(on); {
		j := i
		for j+1 < len(on) && on[j+1] == on[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", on[i], on[j]))
		} else {
			parts = append(parts, strconv.Itoa(on[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}

func joinInt64s(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, " ")
}
