package sim

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
)

// AppSpec is a simulated app: a known base cost and the noise each control
// tames. Costs are for the big cluster at its top frequency, controls on.
type AppSpec struct {
	Name        string
	Description string
	// CPUMcycles is the main thread's work to first frame, in millions of
	// cycles of the fastest core.
	CPUMcycles float64
	// ReadKB is read from flash when not in the page cache (drop_caches).
	ReadKB float64
	// WriteKB is written at startup with Fsyncs fsync calls (tmpfs).
	WriteKB float64
	Fsyncs  int
	// Requests are sequential network round trips before first frame (proxy).
	Requests int
	// DBGrowthKB is added to the app's database by every trial; each KB
	// costs DBCostMsPerKB at startup (restore_snapshot).
	DBGrowthKB    float64
	InitialDBKB   float64
	DBCostMsPerKB float64
	// CacheTTL is how long fetched data stays fresh; an expired cache costs
	// RefreshMcycles plus one request (clock_reset).
	CacheTTL       time.Duration
	RefreshMcycles float64
	// CrashRate is the chance per trial that the app crashes after the
	// measurement, leaving a dialog that slows later trials (dismiss_dialogs).
	CrashRate float64
	// LingerMs is the mean CPU time a previous, unkilled instance steals
	// from the next launch (kill_app).
	LingerMs float64
}

// Apps lists the simulated apps.
func Apps() []AppSpec {
	return []AppSpec{{
		Name: "feed", Description: "a news-feed app: network, database, cache with a TTL",
		CPUMcycles: 950, ReadKB: 2400, WriteKB: 96, Fsyncs: 6, Requests: 3,
		DBGrowthKB: 4, InitialDBKB: 64, DBCostMsPerKB: 0.07,
		CacheTTL: 60 * time.Second, RefreshMcycles: 40, CrashRate: 0.06, LingerMs: 11,
	}, {
		Name: "notes", Description: "a note-taking app: mostly local, small database",
		CPUMcycles: 420, ReadKB: 1200, WriteKB: 48, Fsyncs: 4, Requests: 1,
		DBGrowthKB: 3, InitialDBKB: 32, DBCostMsPerKB: 0.06,
		CacheTTL: 90 * time.Second, RefreshMcycles: 25, CrashRate: 0.06, LingerMs: 7,
	}}
}

// LookupApp returns the app called name.
func LookupApp(name string) (AppSpec, error) {
	var names []string
	for _, a := range Apps() {
		if a.Name == name {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return AppSpec{}, fmt.Errorf("no sim app %q (have: %s)", name, strings.Join(names, ", "))
}

// PackagePrefix starts every simulated package name.
const PackagePrefix = "org.perflab.sim."

// MainActivity is the launch activity of every simulated package.
const MainActivity = ".MainActivity"

// PackageName is the Android package of a sim build: the app name, plus
// the known effect when non-zero ("org.perflab.sim.feed",
// "org.perflab.sim.feed.p1_5" for +1.5%, "org.perflab.sim.feed.m2" for -2%).
func PackageName(app string, effectPct float64) string {
	p := PackagePrefix + app
	if effectPct == 0 {
		return p
	}
	sign := "p"
	if effectPct < 0 {
		sign = "m"
	}
	return p + "." + sign + strings.ReplaceAll(strconv.FormatFloat(math.Abs(effectPct), 'f', -1, 64), ".", "_")
}

// BuildPackage is PackageName for an experiment's sim build, with its
// function effect, when any, as ".f<index><p|m><pct>" (the function's
// index in the app's call tree); a function the app does not have is left
// out (checkBuilds refuses it first).
func BuildPackage(b lab.Build) string {
	p := PackageName(b.App, b.EffectPct)
	if f := b.Effect; f != nil && f.Pct != 0 {
		if i, ok := NewCallTree(b.App).Index(f.Function); ok {
			p += fmt.Sprintf(".f%d%s", i, signedNum(f.Pct))
		}
	}
	return p
}

// signedNum is "p1_5" for +1.5, "m2" for -2: a number in a package name.
func signedNum(x float64) string {
	sign := "p"
	if x < 0 {
		sign = "m"
	}
	return sign + strings.ReplaceAll(strconv.FormatFloat(math.Abs(x), 'f', -1, 64), ".", "_")
}

var pkgRE = regexp.MustCompile(`^org\.perflab\.sim\.([a-z]+)(?:\.([pm])([0-9]+(?:_[0-9]+)?))?(?:\.f([0-9]+)([pm])([0-9]+(?:_[0-9]+)?))?$`)

// ParsePackage inverts PackageName.
func ParsePackage(pkg string) (app string, effectPct float64, ok bool) {
	app, effectPct, _, _, ok = parsePackage(pkg)
	return app, effectPct, ok
}

// parsePackage inverts BuildPackage: also the function effect (fn −1 for
// none).
func parsePackage(pkg string) (app string, effectPct float64, fn int, fnPct float64, ok bool) {
	fn = -1
	m := pkgRE.FindStringSubmatch(pkg)
	if m == nil {
		return "", 0, -1, 0, false
	}
	if _, err := LookupApp(m[1]); err != nil {
		return "", 0, -1, 0, false
	}
	num := func(sign, digits string) (float64, bool) {
		v, err := strconv.ParseFloat(strings.ReplaceAll(digits, "_", "."), 64)
		if sign == "m" {
			v = -v
		}
		return v, err == nil
	}
	if m[2] != "" {
		if effectPct, ok = num(m[2], m[3]); !ok {
			return "", 0, -1, 0, false
		}
	}
	if m[4] != "" {
		i, err := strconv.Atoi(m[4])
		t := NewCallTree(m[1])
		if err != nil || i >= len(t.nodes) || t.nodes[i].comp != compCPU {
			return "", 0, -1, 0, false
		}
		if fnPct, ok = num(m[5], m[6]); !ok {
			return "", 0, -1, 0, false
		}
		fn = i
	}
	return m[1], effectPct, fn, fnPct, true
}

type appState struct {
	pkg     string
	spec    AppSpec
	effect  float64
	tree    *CallTree
	fn      int     // the function a build's effect slows; −1 for none
	fnPct   float64 // by how much, % of its own time
	running bool
	cached  float64 // fraction of the app's files in the page cache
	pid     int
}

// DataDir is an app's private data directory.
func DataDir(pkg string) string { return "/data/data/" + pkg }

// APKPath is where an installed package's APK lives.
func APKPath(pkg string) string { return "/data/app/" + pkg + "-1/base.apk" }

func (ph *Phone) install(pkg string) (*appState, error) {
	if a, ok := ph.apps[pkg]; ok {
		return a, nil
	}
	app, eff, fn, fnPct, ok := parsePackage(pkg)
	if !ok {
		return nil, fmt.Errorf("unknown package %q: the sim installs %s<app>[.p<effect>|.m<effect>][.f<function><p|m><effect>]", pkg, PackagePrefix)
	}
	spec, _ := LookupApp(app)
	a := &appState{pkg: pkg, spec: spec, effect: eff, tree: NewCallTree(app), fn: fn, fnPct: fnPct}
	ph.apps[pkg] = a
	t := ph.now()
	_ = ph.fs.mkdirAll(path.Dir(APKPath(pkg)), t)
	_ = ph.writeRegular(APKPath(pkg), APKPath(pkg), []byte("PK\x03\x04 perflab sim apk "+pkg+"\n"), false)
	_ = ph.fs.mkdirAll(DataDir(pkg), t)
	return a, nil
}

// Install installs a sim package (`pm install`); any name PackageName can
// produce is accepted, so every sim build is installable.
func (ph *Phone) Install(pkg string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	_, err := ph.install(pkg)
	return err
}

// Packages lists the installed packages (`pm list packages`).
func (ph *Phone) Packages() []string {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	var out []string
	for p := range ph.apps {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// PackagePath returns the APK path of a package (`pm path`), installing a
// valid sim package on first use.
func (ph *Phone) PackagePath(pkg string) (string, error) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if _, err := ph.install(pkg); err != nil {
		return "", err
	}
	return APKPath(pkg), nil
}

// ClearData empties an app's data directory (`pm clear`).
func (ph *Phone) ClearData(pkg string) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	a, ok := ph.apps[pkg]
	if !ok {
		return fmt.Errorf("package %s not installed", pkg)
	}
	a.running = false
	n, err := ph.fs.lookup(DataDir(pkg))
	if err == nil && n.dir {
		n.children = map[string]*node{}
	}
	return nil
}

// Running reports whether the package has a live process.
func (ph *Phone) Running(pkg string) bool {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	a, ok := ph.apps[pkg]
	return ok && a.running
}

// ForceStop kills the package's process (`am force-stop`).
func (ph *Phone) ForceStop(pkg string) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if a, ok := ph.apps[pkg]; ok {
		a.running = false
	}
	ph.idle(0.15)
}

// Dialogs lists the crash dialogs on screen, oldest first, as window
// titles ("Application Error: PKG").
func (ph *Phone) Dialogs() []string {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return append([]string(nil), ph.dialogs...)
}

// DismissDialogs closes every crash dialog and returns how many there were.
func (ph *Phone) DismissDialogs() int {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	n := len(ph.dialogs)
	ph.dialogs = nil
	ph.idle(0.2)
	return n
}

// Launch is the outcome of one app start.
type Launch struct {
	Package     string        `json:"package"`
	Activity    string        `json:"activity"`
	State       string        `json:"launch_state"` // "COLD"
	Total       time.Duration `json:"total"`        // am start -W TotalTime
	Wait        time.Duration `json:"wait"`         // am start -W WaitTime
	Metrics     []lab.Metric  `json:"metrics"`      // what the app reports itself
	Crashed     bool          `json:"crashed"`      // crashed after the measurement
	StartedAt   time.Time     `json:"started_at"`   // device clock
	Breakdown   Breakdown     `json:"breakdown"`    // where the time went
	TempC       float64       `json:"temp_c"`
	CPUFreqsKHz []int         `json:"cpu_khz"` // per cluster, at first frame
}

// Breakdown splits a launch's startup time by cause, in milliseconds.
// Validation and tests use it to see which control tames what.
type Breakdown struct {
	CPU, Read, Write, Network, State, Refresh, Linger float64
	DialogFactor, EffectFactor                        float64
	// FnExtra is the time a build's function effect adds (or takes) in its
	// function (Fn, an index in the app's call tree; −1 for none).
	FnExtra float64
	Fn      int
}

// Launch starts the package's main activity, runs the app's measured
// startup and then its test interaction (about a second of device time),
// like `am start -W` followed by the performance test. The app grows its
// database, refreshes its cache when expired and sometimes crashes.
func (ph *Phone) Launch(pkg string) (Launch, error) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	a, err := ph.install(pkg)
	if err != nil {
		return Launch{}, fmt.Errorf("Error: Activity not started, unable to resolve Intent { cmp=%s/%s }: %w", pkg, MainActivity, err)
	}
	s := a.spec
	r := ph.rng
	start := ph.up
	now := ph.now()
	var bd Breakdown

	// App state on disk.
	dataDir := DataDir(pkg)
	dbPath := dataDir + "/databases/" + s.Name + ".db"
	prefs := dataDir + "/shared_prefs/cache.xml"
	dbKB := s.InitialDBKB
	if n, err := ph.fs.lookup(dbPath); err == nil {
		dbKB = float64(len(n.data)) / 1024
	}
	fetched := int64(-1)
	if n, err := ph.fs.lookup(prefs); err == nil {
		fetched = parseFetched(string(n.data))
	}
	expired := fetched < 0 || now.Sub(time.UnixMilli(fetched)) > s.CacheTTL

	// An instance that was not killed is still syncing and collecting garbage.
	if a.running {
		bd.Linger = math.Min(r.ExpFloat64()*s.LingerMs, 6*s.LingerMs)
	}
	a.running = true
	a.pid = 10000 + r.IntN(20000)

	// CPU: the main thread on the biggest cluster, under the governor.
	cycles := s.CPUMcycles * 1e6 * (1 + 0.008*r.NormFloat64())
	if expired {
		cycles += s.RefreshMcycles * 1e6
		bd.Refresh = 0 // counted in CPU; the request below
	}
	for _, c := range ph.clusters {
		c.util = 0.02 + 0.6*r.Float64() // whatever ran just before
	}
	if r.Float64() < 0.5 && ph.boostMS > 0 {
		ph.boostUntil = ph.up + float64(ph.boostMS)/1000
	}
	main := ph.clusters[len(ph.clusters)-1]
	if main.mpOff {
		cycles *= 1 + 0.08*r.Float64() // helper threads share the main core until mpdecision wakes cores
	}
	w := ph.idleWork()
	li := len(ph.clusters) - 1
	w.util[li], w.busy[li] = 1, 1.4
	const dt = 0.002
	t := 0.0
	for cycles > 0 {
		ph.step(dt, w)
		per := float64(main.cur) * 1e3 * main.spec.IPC * dt
		if per >= cycles {
			t += dt * cycles / per
			cycles = 0
		} else {
			cycles -= per
			t += dt
		}
	}
	bd.CPU = t * 1000
	bd.Fn = a.fn
	if a.fn >= 0 {
		// No draw from the phone's stream: builds without a function
		// effect launch exactly as before.
		bd.FnExtra = a.tree.shareOf(a.fn) * bd.CPU * a.fnPct / 100
	}
	freqs := ph.curKHz()

	// Reads: what the page cache lost since the last launch comes from flash.
	if a.cached > 0 {
		a.cached *= 1 - 0.8*r.Float64() // other apps' memory pressure
	}
	bd.Read = s.ReadKB / 1024 / ph.preset.EMMCReadMBps * 1000 * (1 - a.cached) * (1 + 0.008*r.NormFloat64())
	a.cached = 1

	// Writes with fsync: eMMC latency is heavy-tailed; tmpfs is not.
	tmpfs := ph.fs.fsType(dataDir) == "tmpfs"
	for i := 0; i < s.Fsyncs; i++ {
		if tmpfs {
			bd.Write += 0.04
			continue
		}
		bd.Write += 2.6 * math.Exp(0.75*r.NormFloat64())
		if r.Float64() < 0.01 {
			bd.Write += 8 + 20*r.Float64() // flash garbage collection
		}
	}
	bd.Write += s.WriteKB / 1024 / 40 * 1000 * boolF(!tmpfs)

	// Network: live latency drifts; the proxy replays recorded responses.
	ph.netDrift = 0.9*ph.netDrift + 1.6*r.NormFloat64()
	n := s.Requests
	if expired {
		n++
	}
	replay := ph.proxy == "replay" && ph.recordings[pkg]
	for i := 0; i < n; i++ {
		if replay {
			bd.Network += 1.5 * (1 + 0.02*r.NormFloat64())
		} else {
			bd.Network += math.Max(5, 24+ph.netDrift) * math.Exp(0.12*r.NormFloat64())
		}
	}
	if ph.proxy != "off" {
		ph.recordings[pkg] = true
	}

	bd.State = dbKB * s.DBCostMsPerKB
	bd.DialogFactor = 1 + 0.03*math.Min(float64(len(ph.dialogs)), 3)
	bd.EffectFactor = 1 + a.effect/100
	other := bd.Read + bd.Write + bd.Network + bd.State + bd.Linger
	ph.run(other/1000, 0.01, w)
	total := (bd.CPU + bd.FnExtra + other) * bd.DialogFactor * bd.EffectFactor * ph.slowdown

	// The test interaction after first frame: the app writes its database,
	// refreshes the cache stamp, and now and then crashes.
	wi := ph.idleWork()
	wi.util[li], wi.busy[li] = 0.5, 1
	ph.run(1.0, 0.01, wi)
	_ = ph.fs.mkdirAll(dataDir+"/databases", ph.now())
	_ = ph.fs.mkdirAll(dataDir+"/shared_prefs", ph.now())
	db, _ := ph.fs.lookup(dbPath)
	grow := int(s.DBGrowthKB * 1024)
	if db == nil {
		grow += int(s.InitialDBKB * 1024)
	}
	_ = ph.writeRegular(dbPath, dbPath, append(dbBytes(db), make([]byte, grow)...), false)
	if expired {
		_ = ph.writeRegular(prefs, prefs, []byte(fmt.Sprintf(
			"<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n    <long name=\"fetched_at\" value=\"%d\" />\n</map>\n",
			now.Add(time.Duration(total*float64(time.Millisecond))).UnixMilli())), false)
	}
	crashed := r.Float64() < s.CrashRate
	if crashed {
		a.running = false
		ph.dialogs = append(ph.dialogs, "Application Error: "+pkg)
	}
	written := s.WriteKB*1024 + float64(grow)
	if expired {
		written += 24 * 1024 // the refreshed cache entries
	}
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	_ = start
	return Launch{
		Package: pkg, Activity: pkg + "/" + MainActivity, State: "COLD",
		Total: ms(total), Wait: ms(total + 4 + 2*r.Float64()),
		Metrics: []lab.Metric{
			{Name: "startup_ms", Value: round3(total), Unit: "ms", Better: "lower"},
			{Name: "bytes_written", Value: math.Round(written), Unit: "B", Better: "lower"},
		},
		Crashed: crashed, StartedAt: now, Breakdown: bd, TempC: ph.temp, CPUFreqsKHz: freqs,
	}, nil
}

func dbBytes(n *node) []byte {
	if n == nil {
		return nil
	}
	return n.data
}

var fetchedRE = regexp.MustCompile(`name="fetched_at" value="(-?[0-9]+)"`)

func parseFetched(s string) int64 {
	m := fetchedRE.FindStringSubmatch(s)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return -1
	}
	return v
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
