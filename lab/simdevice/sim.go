package simdevice

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/apk"
	"github.com/perflab/perflab/lab/probe"
	"github.com/perflab/perflab/lab/shquote"
	"github.com/perflab/perflab/lab/sim"
	"github.com/perflab/perflab/lab/simdevice/shell"
)

// MetricsPortExtra is the intent extra (an int) naming the device port a
// launched app connects to, through adb reverse, to report its own metrics
// as PERFLAB_METRIC lines.
const MetricsPortExtra = "perflab.metrics_port"

// FetchURLSetting is the global setting that makes every launch of a
// simulated app fetch that URL over HTTP (through the phone's http_proxy,
// like a real app loading its feed), so the record/replay proxy can be
// exercised end to end: settings put global perflab_fetch_url URL.
const FetchURLSetting = "perflab_fetch_url"

// Options configure a simulated device.
type Options struct {
	Preset   string // sim preset, e.g. "pixel"
	Seed     int64
	Root     bool // adbd runs as root (otherwise su -c is needed)
	Realtime bool // launches and probes take wall-clock time
	// Unauthorized: the device never accepts the host's key (adb lists it
	// as "unauthorized").
	Unauthorized bool
	// Serial is the phone's ro.serialno ("": the preset's); adb itself
	// names a TCP device HOST:PORT.
	Serial string
	// Slowdown makes this unit slower (>1) or faster (<1) than its
	// preset (sim.Phone.SetSlowdown); 0 means 1.
	Slowdown float64
	// NoSimpleperf: the phone has no simpleperf, as phones before Android
	// 7.0 (ro.perflab.no_simpleperf=1).
	NoSimpleperf bool
	Logf         func(format string, args ...any)
}

// Sim is a simulated phone served over the adb protocol.
type Sim struct {
	Phone  *sim.Phone
	Shell  *shell.Shell
	Server *Server
	opt    Options

	adapter *adapter
}

// New builds a simulated phone and its adb server (not yet listening).
func New(opt Options) (*Sim, error) {
	if opt.Preset == "" {
		opt.Preset = "pixel"
	}
	ph, err := sim.New(opt.Preset, opt.Seed)
	if err != nil {
		return nil, err
	}
	if opt.Slowdown != 0 {
		if err := ph.SetSlowdown(opt.Slowdown); err != nil {
			return nil, err
		}
	}
	s := &Sim{Phone: ph, opt: opt}
	a := &adapter{Phone: ph, s: s}
	s.adapter = a
	s.Shell = shell.New(a)
	s.Shell.Root = opt.Root
	if opt.Serial != "" {
		s.Shell.SetPropOverride("ro.serialno", opt.Serial)
	}
	if opt.NoSimpleperf {
		s.Shell.SetPropOverride("ro.perflab.no_simpleperf", "1")
	}
	s.Server = NewServer(device{s}, Config{
		Product:      ph.Prop("ro.product.name"),
		Model:        strings.ReplaceAll(ph.Prop("ro.product.model"), " ", "_"),
		Name:         ph.Prop("ro.product.device"),
		Unauthorized: opt.Unauthorized,
		Root:         opt.Root,
		Logf:         opt.Logf,
	})
	return s, nil
}

// device adapts a Sim to the server's Device.
type device struct{ s *Sim }

func (d device) Shell(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
	return d.s.Shell.Run(ctx, cmd, stdin, stdout, stderr)
}

func (d device) Stat(p string) (FileInfo, bool) {
	fi, err := d.s.Phone.Stat(p)
	if err != nil {
		return FileInfo{}, false
	}
	return toFileInfo(fi), true
}

func toFileInfo(fi sim.FileInfo) FileInfo {
	m := uint32(fi.Mode.Perm())
	if fi.Dir {
		m |= ModeDir
	} else {
		m |= ModeReg
	}
	return FileInfo{Name: fi.Name, Mode: m, Size: fi.Size, Mtime: fi.ModTime}
}

func (d device) ReadFile(p string) ([]byte, error) { return d.s.Phone.ReadFile(p) }

func (d device) ReadDir(p string) ([]FileInfo, error) {
	ents, err := d.s.Phone.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, len(ents))
	for i, e := range ents {
		out[i] = toFileInfo(e)
	}
	return out, nil
}

// WriteFile stores a pushed file with adbd's (the shell user's) rights.
func (d device) WriteFile(p string, data []byte, mode uint32, mtime time.Time) error {
	if !d.s.Shell.Root && !strings.HasPrefix(p, "/data/local/tmp/") && !strings.HasPrefix(p, "/sdcard/") {
		return fmt.Errorf("remote couldn't create file: Permission denied")
	}
	if err := d.s.Phone.WriteFile(p, data); err != nil {
		return fmt.Errorf("remote couldn't create file: %v", err)
	}
	return d.s.Phone.Chmod(p, fs.FileMode(mode&0o777))
}

// adapter completes *sim.Phone into the shell's Phone.
type adapter struct {
	*sim.Phone
	s        *Sim
	mu       sync.Mutex
	settings settingsStore
	records  map[*recording]bool // simpleperf records running
	launches uint64              // launches profiled, for their streams
}

// RunsHostBinaries: the simulated phone runs programs built for this host
// (shell.HostRunner), a Go test binary of perflab suite among them.
func (a *adapter) RunsHostBinaries() bool { return true }

func (a *adapter) ABIs() []string {
	abi := a.Preset().ABI
	if abi == "arm64-v8a" {
		return []string{"arm64-v8a", "armeabi-v7a", "armeabi"}
	}
	return []string{abi}
}

// SimAPKPrefix starts the simulated APK files the sim installs.
const SimAPKPrefix = "PK\x03\x04 perflab sim apk "

// InstallAPK installs an APK whose manifest names a simulated app's
// package (or the stub base.apk the sim itself writes): the simulated
// phone runs only its own apps.
func (a *adapter) InstallAPK(data []byte) (string, error) {
	line, _, _ := strings.Cut(string(data), "\n")
	pkg, ok := strings.CutPrefix(line, SimAPKPrefix)
	if !ok {
		m, err := apk.ReadBytes(data)
		if err != nil {
			return "", err
		}
		pkg = m.Package
		if !strings.HasPrefix(pkg, sim.PackagePrefix) {
			return "", fmt.Errorf("%s: the simulated phone runs only simulated apps (%s<app>)", pkg, sim.PackagePrefix)
		}
	}
	pkg = strings.TrimSpace(pkg)
	return pkg, a.Install(pkg)
}

// Advance lets simulated time pass, taking as long in wall time when the
// device is paced in real time.
func (a *adapter) Advance(d time.Duration) {
	a.Phone.Advance(d)
	if a.s.opt.Realtime {
		time.Sleep(d)
	}
}

func (a *adapter) Uninstall(pkg string) error {
	return fmt.Errorf("simulated packages cannot be uninstalled")
}

func (a *adapter) Launch(ctx context.Context, req shell.LaunchRequest) (shell.LaunchResult, error) {
	if req.Activity != sim.MainActivity && req.Activity != req.Package+sim.MainActivity {
		return shell.LaunchResult{}, fmt.Errorf("Activity class {%s/%s} does not exist", req.Package, req.Activity)
	}
	t0 := a.Phone.Uptime()
	l, err := a.Phone.Launch(req.Package)
	if err != nil {
		return shell.LaunchResult{}, err
	}
	prof := a.profile(req.Package, l, t0)
	if a.s.opt.Realtime {
		if err := lab.Sleep(ctx, l.Wait); err != nil {
			return shell.LaunchResult{}, err
		}
	}
	if v, ok := req.Extras[MetricsPortExtra]; ok {
		// The app reports its own metrics to the host through adb reverse.
		port, err := strconv.Atoi(v)
		if err != nil {
			return shell.LaunchResult{}, fmt.Errorf("extra %s=%q is not a port", MetricsPortExtra, v)
		}
		var spans []lab.Span
		if prof != nil {
			spans = prof.Spans
		}
		if err := a.report(ctx, port, l.Metrics, spans); err != nil {
			// The app logs and carries on, as a real app would.
			if a.s.opt.Logf != nil {
				a.s.opt.Logf("simdevice: %s could not report metrics: %v", req.Package, err)
			}
		}
	}
	if u, ok := a.Setting("global", FetchURLSetting); ok && u != "" && u != "null" {
		// The app loads its feed over HTTP, through the phone's proxy.
		var out strings.Builder
		if code := a.s.Shell.Run(ctx, shell.HTTPGetCommand+" "+shquote.Quote(u), strings.NewReader(""), io.Discard, &out); code != 0 && a.s.opt.Logf != nil {
			a.s.opt.Logf("simdevice: %s could not fetch %s: %s", req.Package, u, strings.TrimSpace(out.String()))
		}
	}
	return shell.LaunchResult{Activity: l.Activity, State: l.State, TotalTime: l.Total, WaitTime: l.Wait}, nil
}

// report sends the app's metrics, and its phases as PERFLAB_SPAN lines,
// to the host.
func (a *adapter) report(ctx context.Context, port int, ms []lab.Metric, spans []lab.Span) error {
	c, err := a.s.Server.DialReverse(ctx, port)
	if err != nil {
		return err
	}
	defer c.Close()
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s %s=%s", lab.MetricPrefix, m.Name, strconv.FormatFloat(m.Value, 'g', -1, 64))
		if m.Unit != "" {
			fmt.Fprintf(&b, " unit=%s", m.Unit)
		}
		if m.Better != "" {
			fmt.Fprintf(&b, " better=%s", m.Better)
		}
		b.WriteByte('\n')
	}
	for _, sp := range spans {
		fmt.Fprintf(&b, "%s begin %s %d\n%s end %s %d\n", lab.SpanPrefix, sp.Name, sp.StartNs, lab.SpanPrefix, sp.Name, sp.EndNs)
	}
	_, err = io.WriteString(c, b.String())
	return err
}

// Probe models the perflab-probe program: the same flags, and one JSON
// sample per interval (probe.WriteSample) from the phone model.
func (a *adapter) Probe(ctx context.Context, args []string, out io.Writer) error {
	fl := flag.NewFlagSet("perflab-probe", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	dur := fl.Duration("duration", time.Minute, "")
	interval := fl.Duration("interval", time.Second, "")
	size := fl.Int("size", probe.DefaultSize, "")
	info := fl.Bool("info", false, "")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *interval <= 0 || *dur < 0 || *size <= 0 {
		return fmt.Errorf("-interval and -size must be positive, -duration not negative")
	}
	if *info {
		_, err := fmt.Fprintf(out, "gonum %d×%d float64 matrix multiply, modelled on the simulated %s (%s)\n",
			*size, *size, a.Preset().Model, a.Preset().ABI)
		return err
	}
	if *dur == 0 {
		*dur = 365 * 24 * time.Hour // until interrupted
	}
	samples := make(chan lab.ProbeSample)
	errc := make(chan error, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		errc <- a.RunProbe(ctx, *dur, *interval, a.s.opt.Realtime, samples)
		close(samples)
	}()
	for smp := range samples {
		if err := probe.WriteSample(out, smp); err != nil {
			cancel()
		}
	}
	err := <-errc
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
