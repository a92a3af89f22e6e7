package sim

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
)

// Phone is the simulated phone: kernel files, file system, clock, thermal
// model, governors, services and apps. All methods are safe for concurrent
// use. Time is simulated: it only moves when a method does work (Launch,
// Advance, ProbeSample, ...), so hours of device time take milliseconds.
type Phone struct {
	mu     sync.Mutex
	preset Preset
	rng    *rand.Rand
	seed   int64

	up          float64 // seconds since boot
	bootEpoch   time.Time
	clockOffset float64 // seconds SetClock moved the wall clock by

	temp         float64 // die (what the sensor reads)
	caseTemp     float64
	clusters     []*clusterState
	gpu          gpuState
	thermalCore  bool
	inputBoost   int
	boostMS      int
	boostUntil   float64
	nextPoll     float64
	nextMitigate float64
	lowLoadFor   float64
	dropCaches   string

	services map[string]bool
	props    map[string]string
	fs       memFS
	sys      map[string]*vfile
	links    map[string]string // symlink → target (directories only)

	apps       map[string]*appState // by package
	dialogs    []string
	netDrift   float64 // ms, random walk of the live network's latency
	proxy      string  // off | record | replay
	recordings map[string]bool
	slowdown   float64 // this unit's launch times relative to the model's (1: nominal)
}

type clusterState struct {
	spec     ClusterSpec
	governor string
	minKHz   int
	maxKHz   int
	setspeed int
	cur      int
	util     float64
	capIdx   int    // thermal cap: index into spec.FreqsKHz
	online   []bool // per spec.CPUs
	coreOff  int    // cores taken offline by thermal core control
	mpOff    bool   // mpdecision took idle cores offline
}

type gpuState struct {
	governor string
	minHz    int64
	maxHz    int64
}

// epoch is the wall-clock time at boot; fixed so runs are reproducible.
var epoch = time.Date(2026, time.March, 2, 9, 0, 0, 0, time.UTC)

// New returns a freshly booted phone of the named preset with stock
// settings. The same preset and seed give the same behaviour.
func New(preset string, seed int64) (*Phone, error) {
	p, err := Lookup(preset)
	if err != nil {
		return nil, err
	}
	return NewPhone(p, seed), nil
}

// NewPhone boots a phone of preset p.
func NewPhone(p Preset, seed int64) *Phone {
	ph := &Phone{
		preset:    p,
		seed:      seed,
		rng:       newNoise(seed),
		bootEpoch: epoch,
		temp:      p.Thermal.AmbientC + 8,
		caseTemp:  p.Thermal.AmbientC + 7,
		services:  map[string]bool{"mpdecision": true, "thermal-engine": true, "zygote": true, "surfaceflinger": true},
		props:     map[string]string{},
		sys:       map[string]*vfile{},
		links:     map[string]string{},
		apps:      map[string]*appState{},
		proxy:     "off", recordings: map[string]bool{},
		thermalCore: true, inputBoost: p.InputBoostKHz, boostMS: 40,
		dropCaches: "0", slowdown: 1,
	}
	for _, c := range p.Clusters {
		cs := &clusterState{spec: c, governor: c.StockGovernor, minKHz: c.FreqsKHz[0], maxKHz: c.MaxKHz(),
			cur: c.FreqsKHz[0], capIdx: len(c.FreqsKHz) - 1, online: make([]bool, len(c.CPUs))}
		for i := range cs.online {
			cs.online[i] = true
		}
		ph.clusters = append(ph.clusters, cs)
	}
	ph.gpu = gpuState{governor: p.GPU.StockGovernor, minHz: p.GPU.FreqsHz[0], maxHz: p.GPU.FreqsHz[len(p.GPU.FreqsHz)-1]}
	ph.initProps()
	ph.initFS()
	ph.initSys()
	for _, a := range Apps() {
		ph.install(PackageName(a.Name, 0))
	}
	return ph
}

// Preset returns the phone's model description.
func (ph *Phone) Preset() Preset { return ph.preset }

// Seed returns the seed the phone was made with.
func (ph *Phone) Seed() int64 { return ph.seed }

// SetSlowdown makes this unit f times as slow as its model: every launch
// takes f times as long and the probe counts 1/f the MFLOPS. Phones of one
// model differ like this (binning, battery age, flash wear), which is what
// a device pool's analysis blocks on. f must be positive; 1 is nominal.
func (ph *Phone) SetSlowdown(f float64) error {
	if !(f > 0) || math.IsInf(f, 0) {
		return fmt.Errorf("slowdown %v: want a positive factor (1 is nominal)", f)
	}
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.slowdown = f
	ph.props[PropSlowdown] = strconv.FormatFloat(f, 'g', -1, 64)
	return nil
}

// Slowdown returns the factor SetSlowdown set (1 by default).
func (ph *Phone) Slowdown() float64 {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.slowdown
}

// Reseed restarts the noise generator; the phone's state is kept.
func (ph *Phone) Reseed(seed int64) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.seed = seed
	ph.rng = newNoise(seed)
}

func (ph *Phone) initProps() {
	p := ph.preset
	for k, v := range map[string]string{
		"ro.product.model":         p.Model,
		"ro.product.name":          p.Product,
		"ro.product.device":        p.Product,
		"ro.product.manufacturer":  "perflab-sim",
		"ro.product.cpu.abi":       p.ABI,
		"ro.build.version.sdk":     strconv.Itoa(p.SDK),
		"ro.build.version.release": map[bool]string{true: "6.0.1", false: "10"}[p.SDK < 29],
		"ro.serialno":              "SIM" + strings.ToUpper(p.Product),
		"ro.debuggable":            "1",
		"sys.boot_completed":       "1",
		"init.svc.mpdecision":      "running",
		"init.svc.thermal-engine":  "running",
		PropProxy:                  "off",
		PropExtras:                 Extras,
		PropPreset:                 p.Name,
		PropSlowdown:               "1",
		PropHostPlatform:           lab.HostPlatform(),
	} {
		ph.props[k] = v
	}
}

func (ph *Phone) initFS() {
	t := epoch
	ph.fs = memFS{root: newDir(0o755, t), mounts: map[string]*node{}, sources: map[string]string{}}
	for _, d := range []string{"/data/data", "/data/app", "/data/local/tmp", "/sdcard", "/system/bin", "/proc", "/sys"} {
		_ = ph.fs.mkdirAll(d, t)
	}
}

// ----- time and the physical model -----

// work is the load during a step: per cluster, util is the busiest core's
// utilisation (what the governor sees) and busy the number of busy cores
// (what heats the chip).
type work struct {
	util []float64
	busy []float64
}

func (ph *Phone) idleWork() work {
	w := work{util: make([]float64, len(ph.clusters)), busy: make([]float64, len(ph.clusters))}
	w.util[0], w.busy[0] = 0.06, 0.06
	return w
}

// step advances the model by dt seconds under load w.
func (ph *Phone) step(dt float64, w work) {
	th := ph.preset.Thermal
	tauU := 0.046 // PELT: 32 ms half-life
	power := th.StaticWatts + ph.preset.GPU.gpuPowerW(ph.gpuClock())
	var totalUtil float64
	for i, c := range ph.clusters {
		c.util += (w.util[i] - c.util) * (1 - math.Exp(-dt/tauU))
		totalUtil += w.util[i]
		c.cur = ph.pickFreq(c)
		on := c.onlineCount()
		busy := math.Min(w.busy[i], float64(on))
		power += busy*c.spec.CorePowerW(c.cur)*leakage(ph.temp) + 0.02*float64(on)
	}
	// Two thermal nodes: the die follows the package within a second; the
	// package and case heat towards ambient + R·P over TimeConstantS.
	rjc := th.JunctionCPerW
	ph.caseTemp += (th.AmbientC + (th.ResistanceCPerW-rjc)*power - ph.caseTemp) * (1 - math.Exp(-dt/th.TimeConstantS))
	ph.temp += (ph.caseTemp + rjc*power - ph.temp) * (1 - math.Exp(-dt/1.0))
	ph.up += dt
	// mpdecision: hot-plugs idle cores off after 2 s of low load, back on under load.
	if ph.services["mpdecision"] {
		if totalUtil < 0.2 {
			ph.lowLoadFor += dt
		} else {
			ph.lowLoadFor = 0
		}
		for i, c := range ph.clusters {
			switch {
			case !c.mpOff && ph.lowLoadFor > 1:
				c.mpOff = true
			case c.mpOff && w.util[i] > 0.5 && ph.rng.Float64() < dt/0.04:
				c.mpOff = false
			}
		}
	}
	for ph.up >= ph.nextPoll {
		ph.thermalPoll()
		ph.nextPoll += 0.25
	}
}

// thermalPoll is msm_thermal's 250 ms poll: frequency mitigation (always
// on) and core control (when enabled).
func (ph *Phone) thermalPoll() {
	th := ph.preset.Thermal
	for _, c := range ph.clusters {
		n := len(c.spec.FreqsKHz)
		switch {
		case ph.temp > th.TripC && ph.up >= ph.nextMitigate:
			idx := sort.SearchInts(c.spec.FreqsKHz, c.cur)
			if idx < c.capIdx {
				c.capIdx = idx
			}
			if c.capIdx > 0 {
				c.capIdx--
			}
		case ph.temp < th.TripC-th.HysteresisC && c.capIdx < n-1 && ph.up >= ph.nextMitigate:
			c.capIdx++
		}
	}
	if ph.temp > th.TripC || ph.temp < th.TripC-th.HysteresisC {
		if ph.up >= ph.nextMitigate {
			ph.nextMitigate = ph.up + 1 // one frequency step per second
		}
	}
	last := ph.clusters[len(ph.clusters)-1]
	switch {
	case ph.thermalCore && ph.temp > th.CoreTripC && last.coreOff < len(last.spec.CPUs)-1:
		last.coreOff++
	case (!ph.thermalCore || ph.temp < th.CoreTripC-th.HysteresisC) && last.coreOff > 0:
		last.coreOff--
	}
}

func (c *clusterState) onlineCount() int {
	n := 0
	for i, on := range c.online {
		if !on {
			continue
		}
		if i > 0 && c.mpOff {
			continue
		}
		if i >= len(c.online)-c.coreOff && i > 0 {
			continue
		}
		n++
	}
	return n
}

// cpuOnline reports whether the CPU at index i of the cluster is online.
func (c *clusterState) cpuOnline(i int) bool {
	if i == 0 {
		return true
	}
	return c.online[i] && !c.mpOff && i < len(c.online)-c.coreOff
}

func (ph *Phone) pickFreq(c *clusterState) int {
	tbl := c.spec.FreqsKHz
	top := float64(c.spec.MaxKHz())
	lo := roundToTable(tbl, c.minKHz, true)
	hi := roundToTable(tbl, c.maxKHz, false)
	var t int
	switch c.governor {
	case "performance":
		t = hi
	case "powersave":
		t = lo
	case "userspace":
		t = roundToTable(tbl, c.setspeed, false)
	case "interactive":
		t = roundToTable(tbl, int(top*c.util/0.9), true)
		hispeed := tbl[len(tbl)*2/3]
		if c.util > 0.85 && t < hispeed {
			t = hispeed
		}
	case "ondemand":
		if c.util > 0.8 {
			t = tbl[len(tbl)-1]
		} else {
			t = roundToTable(tbl, int(top*c.util/0.8), true)
		}
	default: // schedutil
		t = roundToTable(tbl, int(1.25*top*c.util), true)
	}
	if ph.up < ph.boostUntil && ph.inputBoost > 0 && t < ph.inputBoost {
		t = roundToTable(tbl, ph.inputBoost, true)
	}
	if t < lo {
		t = lo
	}
	if t > hi {
		t = hi
	}
	if capf := tbl[c.capIdx]; t > capf {
		t = capf
	}
	return t
}

func (ph *Phone) gpuClock() int64 {
	g := ph.gpu
	switch g.governor {
	case "performance":
		return g.maxHz
	case "powersave":
		return g.minHz
	}
	return g.minHz // idle under msm-adreno-tz: the probe does not use the GPU
}

// run advances the model for d seconds in steps of at most dt under w.
func (ph *Phone) run(d, dt float64, w work) {
	for d > 1e-12 {
		s := math.Min(dt, d)
		ph.step(s, w)
		d -= s
	}
}

// Advance lets d of device time pass with the phone idle.
func (ph *Phone) Advance(d time.Duration) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.idle(d.Seconds())
}

func (ph *Phone) idle(s float64) { ph.run(s, 0.1, ph.idleWork()) }

// Uptime is the device time since boot.
func (ph *Phone) Uptime() time.Duration {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return time.Duration(ph.up * float64(time.Second))
}

// Now is the device's wall clock (what `date` prints).
func (ph *Phone) Now() time.Time {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.now()
}

func (ph *Phone) now() time.Time {
	return ph.bootEpoch.Add(time.Duration((ph.up + ph.clockOffset) * float64(time.Second)))
}

// SetClock sets the device's wall clock (`date -s`, `toybox date MMDDhhmm`).
func (ph *Phone) SetClock(t time.Time) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.clockOffset = t.Sub(ph.bootEpoch).Seconds() - ph.up
}

// TempC is the SoC temperature.
func (ph *Phone) TempC() float64 {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.temp
}

// CurrentKHz is each cluster's current frequency (scaling_cur_freq).
func (ph *Phone) CurrentKHz() []int {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.curKHz()
}

func (ph *Phone) curKHz() []int {
	out := make([]int, len(ph.clusters))
	for i, c := range ph.clusters {
		out[i] = c.cur
	}
	return out
}

// ----- properties and services -----

// Prop returns a system property ("" when unset), like getprop.
func (ph *Phone) Prop(key string) string {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.props[key]
}

// Props returns a copy of every system property.
func (ph *Phone) Props() map[string]string {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	m := make(map[string]string, len(ph.props))
	for k, v := range ph.props {
		m[k] = v
	}
	return m
}

// SetProp sets a property like setprop; "ro." properties cannot change
// once set. "perflab.proxy" (off|record|replay) switches the proxy model.
func (ph *Phone) SetProp(key, value string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if strings.HasPrefix(key, "ro.") {
		if _, ok := ph.props[key]; ok {
			return fmt.Errorf("setprop: failed to set property %q: read-only", key)
		}
	}
	if key == PropProxy {
		if err := ph.setProxy(value); err != nil {
			return err
		}
		return nil
	}
	ph.props[key] = value
	return nil
}

// Services lists the init services and whether each is running.
func (ph *Phone) Services() map[string]bool {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	m := map[string]bool{}
	for k, v := range ph.services {
		m[k] = v
	}
	return m
}

// ServiceRunning reports whether service name runs; ok is false when the
// phone has no such service.
func (ph *Phone) ServiceRunning(name string) (running, ok bool) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	running, ok = ph.services[name]
	return
}

// SetService starts or stops a service (`start NAME`, `stop NAME`).
func (ph *Phone) SetService(name string, run bool) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if _, ok := ph.services[name]; !ok {
		return fmt.Errorf("no such service %q: %w", name, fs.ErrNotExist)
	}
	ph.services[name] = run
	ph.props["init.svc."+name] = map[bool]string{true: "running", false: "stopped"}[run]
	if name == "mpdecision" && !run {
		for _, c := range ph.clusters {
			c.mpOff = false // leaves every core online as it exits
		}
	}
	return nil
}

// ----- proxy -----

// SetProxy switches the network between live traffic ("off"), recording
// ("record") and replaying recorded responses ("replay").
func (ph *Phone) SetProxy(mode string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.setProxy(mode)
}

func (ph *Phone) setProxy(mode string) error {
	switch mode {
	case "", "off":
		mode = "off"
	case "record", "replay":
	default:
		return fmt.Errorf("proxy mode %q: want off, record or replay", mode)
	}
	ph.proxy = mode
	ph.props[PropProxy] = mode
	return nil
}

// Proxy returns the proxy mode.
func (ph *Phone) Proxy() string {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.proxy
}
