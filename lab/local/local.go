// Package local runs trials as processes on this Linux host: a build is a
// command line, and each trial measures the process (wall, user, sys, max
// RSS), optionally its instructions (perf stat) or a Cachegrind cost, and
// the metrics the command reports itself.
package local

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/proxy"
)

// Metric names measured by the local device itself. Any other name is a
// metric the command reports with PERFLAB_METRIC lines.
const (
	MetricWall         = "wall_ms"
	MetricUser         = "user_ms"
	MetricSys          = "sys_ms"
	MetricMaxRSS       = "max_rss_kb"
	MetricInstructions = "instructions"
	MetricCachegrind   = "cachegrind"
)

// defaultMetrics are measured when an experiment names none. max_rss_kb is
// measured only on request, through GNU time: Linux charges a child the
// peak RSS of the process that started it (exec keeps the vfork parent's
// high-water mark), so perflab's own wait4 would report perflab's size.
var defaultMetrics = []string{MetricWall, MetricUser, MetricSys}

func builtin(name string) bool {
	switch name {
	case MetricWall, MetricUser, MetricSys, MetricMaxRSS, MetricInstructions, MetricCachegrind:
		return true
	}
	return false
}

// processMetric reports whether name is measured from the process itself,
// which is meaningless while it runs under valgrind.
// builtinMetrics are the metrics perflab measures itself on this host.
var builtinMetrics = []string{MetricWall, MetricUser, MetricSys, MetricMaxRSS, MetricInstructions, MetricCachegrind}

func processMetric(name string) bool {
	switch name {
	case MetricWall, MetricUser, MetricSys, MetricMaxRSS, MetricInstructions:
		return true
	}
	return false
}

// Device is the local Linux host. It is a lab.Prober (the MFLOPS probe
// runs here) and a lab.Governor (through /sys/devices/system/cpu, when
// cpufreq is present and writable; the embedded governor.Local).
type Device struct {
	*governor.Local
	info lab.DeviceInfo
	// cpus, for a pinned worker (PinnedWorker), is the CPU list every
	// trial's command is pinned to (taskset -c), unless controls.pin_cpu
	// names one.
	cpus string

	perfOnce   sync.Once
	perf       perfStatus
	perfRecord perfRecordStatus // whether perf record works, for profiles
	syms       elfsym.Resolver  // the profiled binaries' symbols
	timeOnce   sync.Once
	time       string // GNU time, for max_rss_kb; "" when missing

	mu        sync.Mutex
	exp       *lab.Experiment
	metrics   []string // requested metrics; nil = defaults plus all reported
	snapshots map[string]string
	tmp       string
	srv       *metricServer
	stdin     *os.File            // /dev/null, every trial's stdin
	spare     *capture            // empty output files no process holds
	reaper    *reaper             // ends what trials leave behind
	trialMu   sync.Mutex          // one trial at a time
	kill      groupKiller         // ends a trial's command when its run is cancelled; under trialMu
	host      hostMeter           // how busy the host is during trials; under trialMu
	env       map[string][]string // environment per build key, made by spawnEnv
	paths     map[string]string   // commands found in PATH (lookCommand)
	proxy     *proxy.Controller   // record/replay proxy, when controls.proxy is on
	govSet    bool                // Setup applied controls.governor
	govKeep   bool                // and the profile says keep it
}

// New returns the local device. Whether perf can count instructions and
// whether GNU time is there are checked when those metrics are asked for
// (perf takes tens of milliseconds to answer); NewProbed checks at once.
func New() *Device {
	d := &Device{Local: governor.NewLocal(), snapshots: map[string]string{}}
	d.info = d.describe(nil, nil)
	return d
}

// NewWorker returns another local device, "local#n" (n ≥ 2), for a pool
// of workers on this host that run rounds side by side (perflab suite
// --workers): each has its own folders, metrics listener and reaper.
// Sharing the host, they suit work that waits more than it computes, or
// a host with cores to spare; its governor is everyone's.
func NewWorker(n int) *Device {
	d := New()
	d.info.ID = fmt.Sprintf("%s#%d", d.info.ID, n)
	return d
}

// PinnedWorker is worker n (1-based) of k local workers, each pinned to
// its own CPUs: the host's CPUs split into k equal, consecutive sets (one
// worker per CPU at most; with more workers than CPUs they wrap around and
// share, which Shared reports).
func PinnedWorker(n, k int) *Device {
	d := New()
	if n > 1 {
		d = NewWorker(n)
	}
	lo, hi := WorkerCPUs(n, k, runtime.NumCPU())
	d.cpus = fmt.Sprintf("%d-%d", lo, hi)
	d.info.Props = maps.Clone(d.info.Props)
	if d.info.Props == nil {
		d.info.Props = map[string]string{}
	}
	d.info.Props["cpus"] = d.cpus
	return d
}

// WorkerCPUs is the CPU range [lo, hi] of worker n (1-based) of k on a
// host of ncpu CPUs.
func WorkerCPUs(n, k, ncpu int) (lo, hi int) {
	per := max(ncpu/k, 1)
	lo = ((n - 1) * per) % ncpu
	return lo, min(lo+per-1, ncpu-1)
}

// NewProbed returns the local device with perf and GNU time checked, so
// Info says whether instructions and max_rss_kb can be measured (for device
// listings).
func NewProbed() *Device {
	d := &Device{Local: governor.NewLocal(), snapshots: map[string]string{}}
	perf, gnuTime := d.perfStatus(), d.gnuTime()
	d.info = d.describe(&perf, &gnuTime)
	// A listing also repairs what a perflab killed mid-run left locked.
	d.info.Notes = append(d.Local.RepairLeftover(context.Background()), d.info.Notes...)
	return d
}

// perfStatus probes perf stat once.
func (d *Device) perfStatus() perfStatus {
	d.perfOnce.Do(func() { d.perf = probePerf() })
	return d.perf
}

// gnuTime looks for GNU time once.
func (d *Device) gnuTime() string {
	d.timeOnce.Do(func() { d.time = findGNUTime() })
	return d.time
}

// describe builds the device info; perf and gnuTime are nil when not
// probed yet.
func (d *Device) describe(perf *perfStatus, gnuTime *string) lab.DeviceInfo {
	host, _ := os.Hostname()
	info := lab.DeviceInfo{
		ID:      "local",
		Backend: "local",
		Model:   cpuModel(),
		State:   "device",
		Caps:    []string{lab.CapCommandBuilds, lab.CapPrepare, lab.CapStateDir, lab.CapProxy},
		Props: map[string]string{
			"host":    host,
			"cpus":    strconv.Itoa(runtime.NumCPU()),
			"os":      runtime.GOOS + "/" + runtime.GOARCH,
			"kernel":  readTrim("/proc/sys/kernel/osrelease"),
			"metrics": strings.Join(append(append([]string{}, defaultMetrics...), MetricMaxRSS, MetricInstructions, MetricCachegrind), ","),
		},
	}
	if _, err := exec.LookPath("setarch"); err == nil {
		info.Caps = append(info.Caps, lab.CapASLR)
	} else {
		info.Notes = append(info.Notes, "aslr: setarch not found (install util-linux)")
	}
	if _, err := exec.LookPath("taskset"); err == nil {
		info.Caps = append(info.Caps, lab.CapPinCPU)
	} else {
		info.Notes = append(info.Notes, "pin_cpu: taskset not found (install util-linux)")
	}
	switch {
	case perf == nil:
		info.Props["instructions"] = "perf stat (checked when requested)"
	case perf.ok:
		info.Props["instructions"] = "perf stat"
	default:
		info.Props["instructions"] = "unavailable"
		info.Notes = append(info.Notes, "instructions: "+perf.why)
	}
	switch {
	case gnuTime == nil:
		info.Props["max_rss_kb"] = "GNU time (checked when requested)"
	case *gnuTime != "":
		info.Props["max_rss_kb"] = *gnuTime
	default:
		info.Props["max_rss_kb"] = "unavailable"
		info.Notes = append(info.Notes, "max_rss_kb: "+noGNUTime)
	}
	if p, err := exec.LookPath("valgrind"); err == nil {
		info.Props["cachegrind"] = p
	} else {
		info.Props["cachegrind"] = "unavailable"
		info.Notes = append(info.Notes, "cachegrind: valgrind not found (apt-get install valgrind)")
	}
	if err := d.CapError(lab.CapGovernor); err != nil {
		info.Notes = append(info.Notes, "governor: "+err.Error())
	}
	info.Caps = lab.DeriveCaps(d, info.Caps...)
	return info
}

// Info describes the host.
func (d *Device) Info() lab.DeviceInfo { return d.info }

// ReportsTrialStart says the device calls TrialRequest.Started once each
// trial is under way (lab.TrialStartReporter): its trials can be a
// millisecond, and the hand-off of the previous trial to the views then
// overlaps the command.
func (d *Device) ReportsTrialStart() bool { return true }

// Setup checks the builds and requested metrics, snapshots state_dir and
// opens the metrics listener.
func (d *Device) Setup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	if err := d.CheckBuilds(exp); err != nil {
		return nil, err
	}
	metrics, err := d.checkMetrics(exp.Metrics, exp.Controls)
	if err != nil {
		return nil, err
	}
	if err := d.CheckControls(exp); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "perflab-local-")
	if err != nil {
		return nil, err
	}
	srv, err := newMetricServer()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		srv.close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("output capture: %w", err)
	}
	d.mu.Lock()
	if d.reaper == nil {
		d.reaper = newReaper()
	}
	if d.stdin != nil {
		d.stdin.Close()
	}
	// A session before this one on the same device: its folder and
	// metrics listener go.
	if d.tmp != "" {
		os.RemoveAll(d.tmp)
	}
	if d.srv != nil {
		d.srv.close()
	}
	d.exp, d.metrics, d.tmp, d.srv, d.stdin = exp, metrics, tmp, srv, stdin
	d.env = map[string][]string{}
	var envErr error
	for _, k := range slices.Sorted(maps.Keys(exp.Builds)) {
		env, err := spawnEnv(buildEnv(exp.Builds[k], srv.addr(), d.reaper.env()))
		if err != nil && envErr == nil {
			envErr = fmt.Errorf("builds.%s.env: %w", k, err)
		}
		d.env[k] = env
	}
	reaperNote := d.reaper.note
	d.mu.Unlock()
	if envErr != nil {
		d.Close()
		return nil, envErr
	}

	detail := map[string]string{
		"metrics_addr": srv.addr(),
		"instructions": d.info.Props["instructions"],
		"cachegrind":   d.info.Props["cachegrind"],
	}
	if reaperNote != "" {
		detail["leftovers"] = reaperNote
	}
	if d.cpus != "" {
		detail["cpus"] = d.cpus // a pinned worker's
	}
	if metrics == nil {
		detail["metrics"] = strings.Join(defaultMetrics, ",") + " + reported"
	} else {
		detail["metrics"] = strings.Join(metrics, ",")
	}
	if err := d.setupProxy(exp, detail); err != nil {
		d.Close()
		return nil, err
	}
	if exp.Controls.StateDir != "" {
		snap, err := d.snapshot(exp.Controls.StateDir)
		if err != nil {
			d.Close()
			return nil, err
		}
		detail["state_dir_snapshot"] = snap
	}
	events := []lab.Event{{Type: lab.EventSettings, Settings: &lab.Settings{Detail: detail}}}
	gov, err := d.setupGovernor(ctx, exp.Controls.Governor)
	if err != nil {
		d.Close()
		return nil, err
	}
	if gov != nil {
		events = append(events, *gov)
	}
	return events, nil
}

// CheckBuilds says whether every build of exp is a command this host can
// start (lab.BuildChecker): a command found in PATH, in an existing
// directory, with no app, apk or package. It runs nothing; Setup makes the
// same check.
func (d *Device) CheckBuilds(exp *lab.Experiment) error {
	for _, k := range exp.ArmKeys() {
		b, ok := exp.Builds[k]
		if !ok {
			return fmt.Errorf("builds.%s: missing", k)
		}
		if len(b.Command) == 0 || b.Command[0] == "" {
			return fmt.Errorf("builds.%s.command: empty; a local build is a command line, e.g. [\"sh\",\"-c\",\"make test\"]", k)
		}
		if b.App != "" || b.APK != "" || b.Package != "" {
			return fmt.Errorf("builds.%s: app/apk/package are for sim and adb devices; a local build is a command", k)
		}
		if b.Dir != "" {
			if st, err := os.Stat(b.Dir); err != nil || !st.IsDir() {
				return fmt.Errorf("builds.%s.dir: %s is not a directory", k, b.Dir)
			}
		}
		if _, err := exec.LookPath(b.Command[0]); err != nil && !strings.Contains(b.Command[0], "/") {
			return fmt.Errorf("builds.%s.command: %q not found in PATH", k, b.Command[0])
		}
		for _, name := range slices.Sorted(maps.Keys(b.Env)) {
			if strings.ContainsRune(name, 0) || strings.ContainsRune(b.Env[name], 0) {
				return fmt.Errorf("builds.%s.env.%q: holds a NUL byte, which no process environment can carry", k, name)
			}
		}
	}
	return nil
}

var _ lab.BuildChecker = (*Device)(nil)

// CheckMetrics says, without running anything, whether the metrics exp
// asks for can be measured here as far as their names tell
// (lab.MetricChecker): a name a letter or two from a built-in one is a
// typo, and cachegrind cannot share a trial with a process metric. Any
// other name is one the command reports itself. Whether perf, valgrind or
// GNU time is there is only learnt at Setup, which makes this check first.
func (d *Device) CheckMetrics(exp *lab.Experiment) error {
	_, err := requestedMetrics(exp.Metrics, exp.Controls)
	return err
}

var _ lab.MetricChecker = (*Device)(nil)

// requestedMetrics is the metrics a trial measures, checked by name only;
// nil means the defaults plus everything the command reports.
func requestedMetrics(req []string, c lab.Controls) ([]string, error) {
	cg := c.Cachegrind
	for _, m := range req {
		if m == MetricCachegrind {
			cg = true
		}
	}
	if len(req) == 0 && !cg {
		return nil, nil
	}
	for i, m := range req {
		if err := lab.CheckMetricName(i, m, builtinMetrics, true); err != nil {
			return nil, err
		}
	}
	metrics := append([]string{}, req...)
	if cg && !contains(metrics, MetricCachegrind) {
		metrics = append(metrics, MetricCachegrind)
	}
	if cg {
		for _, m := range metrics {
			if processMetric(m) {
				return nil, fmt.Errorf("metrics: %s cannot be measured in the same trial as cachegrind (the command runs under valgrind, which is ~50x slower); use two experiments", m)
			}
		}
	}
	return metrics, nil
}

// checkMetrics validates the requested metrics against what this host can
// measure: requestedMetrics, then the tools they need; nil means the
// defaults plus everything the command reports.
func (d *Device) checkMetrics(req []string, c lab.Controls) ([]string, error) {
	metrics, err := requestedMetrics(req, c)
	if err != nil {
		return nil, err
	}
	for i, m := range metrics {
		switch {
		case m == MetricInstructions && !d.perfStatus().ok:
			return nil, fmt.Errorf("metrics[%d]: instructions: %s", i, d.perfStatus().why)
		case m == MetricMaxRSS && d.gnuTime() == "":
			return nil, fmt.Errorf("metrics[%d]: max_rss_kb: %s", i, noGNUTime)
		case m == MetricCachegrind:
			if _, err := exec.LookPath("valgrind"); err != nil {
				return nil, fmt.Errorf("metrics: cachegrind needs valgrind, which is not installed (apt-get install valgrind)")
			}
		}
	}
	return metrics, nil
}

// CheckControls says, without running anything, whether this host can
// apply the controls of exp (lab.ControlsChecker): checkControls, which
// every trial makes again for the controls it is given, then state_dir is
// a directory and controls.governor names a profile this host can apply
// (cpufreq there and writable). Setup makes this check first.
func (d *Device) CheckControls(exp *lab.Experiment) error {
	if err := d.checkControls(exp.Controls); err != nil {
		return err
	}
	if dir := exp.Controls.StateDir; dir != "" {
		if err := checkStateDir(dir); err != nil {
			return err
		}
	}
	_, err := d.governorProfile(exp.Controls.Governor)
	return err
}

var _ lab.ControlsChecker = (*Device)(nil)

// checkControls says whether this host can apply c, from what Open learnt
// (setarch, taskset, the number of CPUs): the check of every trial, whose
// controls the workbench may change while the run lasts.
func (d *Device) checkControls(c lab.Controls) error {
	if c.ASLROff() && !d.info.Has(lab.CapASLR) {
		return fmt.Errorf("controls.aslr: false needs setarch, which is not installed: %w", lab.ErrUnsupported)
	}
	if cpu := c.PinnedCPU(); cpu >= 0 {
		if !d.info.Has(lab.CapPinCPU) {
			return fmt.Errorf("controls.pin_cpu: needs taskset, which is not installed: %w", lab.ErrUnsupported)
		}
		if cpu >= runtime.NumCPU() {
			return fmt.Errorf("controls.pin_cpu: CPU %d does not exist (this host has %d CPUs, 0-%d)", cpu, runtime.NumCPU(), runtime.NumCPU()-1)
		}
	}
	var unsupported []string
	for _, f := range [...]struct {
		name string
		on   bool
	}{
		{"restore_snapshot", c.RestoreSnapshot}, {"kill_app", c.KillApp}, {"dismiss_dialogs", c.DismissDialogs},
		{"clock_reset", c.ClockReset}, {"tmpfs", c.Tmpfs}, {"drop_caches", c.DropCaches},
	} {
		if f.on {
			unsupported = append(unsupported, f.name)
		}
	}
	if len(unsupported) > 0 {
		sortStrings(unsupported)
		return fmt.Errorf("controls.%s: the local device cannot do this (use prepare/cleanup commands and state_dir): %w", unsupported[0], lab.ErrUnsupported)
	}
	return nil
}

// Close restores state_dir to its snapshot and removes temporary files.
func (d *Device) Close() error {
	d.trialMu.Lock() // let a trial in flight finish first
	defer d.trialMu.Unlock()
	d.kill.close()
	d.host.close()
	d.mu.Lock()
	defer d.mu.Unlock()
	firstErr := d.closeProxyLocked()
	if err := d.restoreGovernorLocked(); err != nil && firstErr == nil {
		firstErr = err
	}
	if d.srv != nil {
		d.srv.close()
		d.srv = nil
	}
	if d.reaper != nil {
		d.reaper.close()
		d.reaper = nil
	}
	if d.stdin != nil {
		d.stdin.Close()
		d.stdin = nil
	}
	if d.spare != nil {
		d.spare.close()
		d.spare = nil
	}
	for dir, snap := range d.snapshots {
		if err := restoreDir(snap, dir); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("restoring state_dir %s: %w", dir, err)
		}
	}
	d.snapshots = map[string]string{}
	if d.tmp != "" {
		os.RemoveAll(d.tmp)
		d.tmp = ""
	}
	return firstErr
}

// noGNUTime explains why max_rss_kb needs GNU time.
const noGNUTime = "needs GNU time (apt-get install time): Linux charges a child the peak RSS of the process that started it, so only a small launcher can measure it"

// findGNUTime returns the path of GNU time, or "".
func findGNUTime() string {
	for _, p := range []string{"/usr/bin/time", "/bin/time"} {
		out, err := exec.Command(p, "--version").CombinedOutput()
		if err == nil && strings.Contains(string(out), "GNU") {
			return p
		}
	}
	return ""
}

// buildEnv is a build's environment; mark tags its processes as the run's.
func buildEnv(b lab.Build, addr, mark string) []string {
	env := os.Environ()
	for k, v := range b.Env {
		env = append(env, k+"="+v)
	}
	return append(env, lab.MetricsAddrEnv+"="+addr, mark)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

var _ lab.Device = (*Device)(nil)

// listenLoopback opens a TCP listener on a free loopback port.
func listenLoopback() (*net.TCPListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return ln.(*net.TCPListener), nil
}
