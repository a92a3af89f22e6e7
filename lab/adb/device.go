package adb

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/apk"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/proxy"
	"github.com/perflab/perflab/lab/shquote"
)

// Device paths perflab uses on the phone.
const (
	TmpDir      = "/data/local/tmp"
	SnapshotDir = TmpDir + "/perflab-snapshot"
)

// MetricsPortExtra is the int intent extra telling a launched app which
// device port reaches perflab's metric listener through adb reverse.
const MetricsPortExtra = "perflab.metrics_port"

// Am metrics reported for every launch.
const (
	MetricTotalTime = "total_time_ms" // am start -W TotalTime
	MetricWaitTime  = "wait_time_ms"  // am start -W WaitTime
)

// Device is a phone behind an adb server: a lab.Device, lab.Governor and
// lab.Prober.
type Device struct {
	c      *Client
	serial string
	// ReconnectTimeout bounds how long Reconnect waits for a lost device.
	ReconnectTimeout time.Duration
	// MetricsWait bounds how long a trial waits for the app's own metric
	// lines after am start returns.
	MetricsWait time.Duration

	mu       sync.Mutex
	cmdState // command builds (commands.go)
	info     lab.DeviceInfo
	rootVia  string // "adbd", "su" or ""
	exp      *lab.Experiment
	builds   map[string]appBuild
	layout   *governor.Layout
	original *lab.GovernorProfile // before the first Apply, restored by Close
	applied  *lab.GovernorProfile
	govRaw   string
	clock0   time.Time
	mounted  map[string]bool
	builtins governor.Resolver // profile names the device knows besides tuned ones
	metrics  *metricListener
	lost     bool
	hp       *phoneProxy // record/replay proxy wired through adb reverse
	repaired []string    // notes of the repair at Open, for RepairLeftover

	simpleperf simpleperfStatus // whether the phone has simpleperf (CanProfile)

	pxMu sync.Mutex // serializes wiring the proxy to the phone
}

type appBuild struct {
	Package, Activity string
}

// Open finds serial on the given adb servers (DefaultServers when empty)
// and returns it as a device. A device listed in another state than
// "device" is an error that says what to do.
func Open(ctx context.Context, serial string, servers []string) (*Device, error) {
	return OpenVia(ctx, serial, clients(servers))
}

// clients returns a client per server address (DefaultServers when none).
func clients(servers []string) []*Client {
	if len(servers) == 0 {
		servers = DefaultServers()
	}
	cs := make([]*Client, len(servers))
	for i, s := range servers {
		cs[i] = NewClient(s)
	}
	return cs
}

// OpenVia is Open with the servers' clients given, e.g. with a Tunnel.
func OpenVia(ctx context.Context, serial string, cs []*Client) (*Device, error) {
	if len(cs) == 0 {
		cs = clients(nil)
	}
	var servers, seen []string
	var errs []error
	for _, c := range cs {
		s := c.Addr
		servers = append(servers, s)
		es, err := c.Devices(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range es {
			seen = append(seen, e.Serial+" ("+e.State+" on "+s+")")
			if e.Serial != serial {
				continue
			}
			if e.State != "device" {
				return nil, fmt.Errorf("device %s is %s on adb server %s%s", serial, e.State, s, stateHint(e.State))
			}
			d := &Device{c: c, serial: serial, ReconnectTimeout: 90 * time.Second, MetricsWait: 3 * time.Second}
			if err := d.probe(ctx, e, false); err != nil {
				return nil, err
			}
			d.repairLeftover(ctx)
			return d, nil
		}
	}
	msg := fmt.Sprintf("device %s not found on adb server(s) %s", serial, strings.Join(servers, ", "))
	if len(seen) > 0 {
		msg += "; attached: " + strings.Join(seen, ", ")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", msg, errors.Join(errs...))
	}
	return nil, errors.New(msg)
}

func stateHint(state string) string {
	switch state {
	case "unauthorized":
		return ": accept the \"Allow USB debugging\" prompt on the phone"
	case "offline":
		return ": reconnect it (adb reconnect) or wait for it to come back"
	}
	if strings.HasPrefix(state, "no permissions") {
		return ": fix the udev rules for this user"
	}
	return ""
}

// List returns the devices of every server, in every state.
func List(ctx context.Context, servers []string) ([]lab.DeviceInfo, error) {
	return ListVia(ctx, clients(servers))
}

// ListVia is List with the servers' clients given, e.g. with a Tunnel.
func ListVia(ctx context.Context, cs []*Client) ([]lab.DeviceInfo, error) {
	if len(cs) == 0 {
		cs = clients(nil)
	}
	var out []lab.DeviceInfo
	var errs []error
	for _, c := range cs {
		s := c.Addr
		es, err := c.Devices(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range es {
			info := lab.DeviceInfo{ID: "adb:" + e.Serial, Backend: "adb", Model: strings.ReplaceAll(e.Attrs["model"], "_", " "),
				State: e.State, Server: s, Caps: []string{}}
			if e.State == "device" {
				d := &Device{c: c, serial: e.Serial}
				if err := d.probe(ctx, e, true); err == nil {
					d.repairLeftover(ctx)
					info = d.Info()
				} else {
					info.Notes = append(info.Notes, err.Error())
				}
			} else {
				info.Notes = append(info.Notes, "not usable: "+e.State+stateHint(e.State))
			}
			out = append(out, info)
		}
	}
	return out, errors.Join(errs...)
}

// probe reads the device's properties and how it gets root.
func (d *Device) probe(ctx context.Context, e Entry, listing bool) error {
	out, err := d.c.Run(ctx, d.serial, "getprop ro.product.model; getprop ro.product.cpu.abi; getprop ro.build.version.sdk; getprop ro.product.manufacturer; id -u")
	if err != nil {
		return fmt.Errorf("device %s: %w", d.serial, err)
	}
	f := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for len(f) < 5 {
		f = append(f, "")
	}
	d.rootVia = ""
	if strings.TrimSpace(f[4]) == "0" {
		d.rootVia = "adbd"
	} else if listing {
		// Listing must not pop up a root-grant prompt on every phone:
		// only look for su; Open really tries it.
		if out, err := d.c.Run(ctx, d.serial, "which su"); err == nil && strings.TrimSpace(out) != "" {
			d.rootVia = "su"
		}
	} else if out, err := d.c.Run(ctx, d.serial, "su 0 id -u"); err == nil && strings.TrimSpace(out) == "0" {
		d.rootVia = "su"
	}
	info := lab.DeviceInfo{
		ID: "adb:" + d.serial, Backend: "adb", Model: f[0], State: e.State, Server: d.c.Addr,
		Props: map[string]string{"ro.product.cpu.abi": f[1], "ro.build.version.sdk": f[2], "ro.product.manufacturer": f[3], "root": d.rootVia},
	}
	reported := []string{lab.CapAPKBuilds, lab.CapKillApp, lab.CapDismissDialogs, lab.CapReverse}
	if d.rootVia != "" {
		reported = append(reported, lab.CapRestoreSnapshot, lab.CapClockReset, lab.CapTmpfs, lab.CapDropCaches)
	} else {
		info.Notes = append(info.Notes, "no root (adbd is not root and su is missing): governor, snapshot restore, clock reset, tmpfs and drop_caches need root")
	}
	// The proxy needs only the shell user (settings put global
	// http_proxy) and adb reverse to this host.
	switch {
	case d.c.Tunnel != nil:
		info.Notes = append(info.Notes, "adb server "+d.c.Addr+" reached through "+d.c.Tunnel.String()+": app metrics and the proxy come back over it")
		reported = append(reported, lab.CapProxy)
	case d.c.Remote():
		info.Notes = append(info.Notes, "adb server "+d.c.Addr+" is remote: app metrics and the proxy over adb reverse would reach that host, not this one (pass --ssh USER@HOST to forward them); am start -W metrics work")
	default:
		reported = append(reported, lab.CapProxy)
	}
	info.Caps = lab.DeriveCaps(d, reported...)
	d.mu.Lock()
	d.info = info
	d.mu.Unlock()
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CapError implements lab.CapChecker: the governor needs root.
func (d *Device) CapError(c string) error {
	if c == lab.CapGovernor && d.rootVia == "" {
		return fmt.Errorf("governor: needs root (adbd is not root and su is missing): %w", fs.ErrPermission)
	}
	return nil
}

// Info describes the device.
func (d *Device) Info() lab.DeviceInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.info
}

// Client returns the adb client the device is reached through.
func (d *Device) Client() *Client { return d.c }

// Serial returns the adb serial.
func (d *Device) Serial() string { return d.serial }

// asRoot wraps a shell command line so it runs as root.
func (d *Device) asRoot(cmd string) (string, error) {
	switch d.rootVia {
	case "adbd":
		return cmd, nil
	case "su":
		return "su 0 sh -c " + shquote.Quote(cmd), nil
	}
	return "", fmt.Errorf("needs root (adbd is not root and su is missing): %w", fs.ErrPermission)
}

// HasRoot reports whether the device runs commands as root (adbd is root
// or su works).
func (d *Device) HasRoot() bool { return d.rootVia != "" }

// RunRoot runs a shell command line as root; without root it fails with
// an error wrapping fs.ErrPermission.
func (d *Device) RunRoot(ctx context.Context, cmd string) (string, error) { return d.runRoot(ctx, cmd) }

// Prop reads a system property with getprop ("" when unset).
func (d *Device) Prop(ctx context.Context, name string) (string, error) {
	out, err := d.c.Run(ctx, d.serial, "getprop "+shquote.Quote(name))
	return strings.TrimSpace(out), err
}

func (d *Device) runRoot(ctx context.Context, cmd string) (string, error) {
	c, err := d.asRoot(cmd)
	if err != nil {
		return "", err
	}
	return d.c.Run(ctx, d.serial, c)
}

// ReadFile implements governor.Files with cat.
func (d *Device) ReadFile(ctx context.Context, p string) (string, error) {
	out, err := d.c.Run(ctx, d.serial, "cat "+shquote.Quote(p))
	if err != nil {
		return "", fileErr(p, err)
	}
	return out, nil
}

// WriteFile implements governor.Files with echo as root.
func (d *Device) WriteFile(ctx context.Context, p, value string) error {
	_, err := d.runRoot(ctx, "echo "+shquote.Quote(value)+" > "+shquote.Quote(p))
	if err != nil {
		return fileErr(p, err)
	}
	return nil
}

func fileErr(p string, err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		switch {
		case strings.Contains(ee.Stderr, "No such file"):
			return &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		case strings.Contains(ee.Stderr, "Permission denied"):
			return &fs.PathError{Op: "write", Path: p, Err: fs.ErrPermission}
		}
	}
	return fmt.Errorf("%s: %w", p, err)
}

// ServiceRunning implements governor.Services through init.svc properties.
func (d *Device) ServiceRunning(ctx context.Context, name string) (bool, error) {
	out, err := d.c.Run(ctx, d.serial, "getprop "+shquote.Quote("init.svc."+name))
	if err != nil {
		return false, err
	}
	switch strings.TrimSpace(out) {
	case "":
		return false, fmt.Errorf("service %s: %w", name, fs.ErrNotExist)
	case "running":
		return true, nil
	}
	return false, nil
}

// SetService implements governor.Services with start/stop as root.
func (d *Device) SetService(ctx context.Context, name string, run bool) error {
	verb := "stop"
	if run {
		verb = "start"
	}
	_, err := d.runRoot(ctx, verb+" "+shquote.Quote(name))
	return err
}

func (d *Device) govLayout(ctx context.Context) (governor.Layout, error) {
	d.mu.Lock()
	l := d.layout
	d.mu.Unlock()
	if l != nil {
		return *l, nil
	}
	lay, err := governor.Discover(ctx, d, d)
	if err != nil {
		return governor.Layout{}, err
	}
	d.mu.Lock()
	d.layout = &lay
	d.mu.Unlock()
	return lay, nil
}

// ReadProfile implements lab.Governor.
func (d *Device) ReadProfile(ctx context.Context) (lab.GovernorProfile, error) {
	l, err := d.govLayout(ctx)
	if err != nil {
		return lab.GovernorProfile{}, err
	}
	return governor.Read(ctx, d, d, l)
}

// ApplyProfile implements lab.Governor: writes p through sysfs as root and
// reads every file back. The first call saves the original settings in the
// crash record (see guard), which Close restores unless p.Keep.
func (d *Device) ApplyProfile(ctx context.Context, p lab.GovernorProfile) ([]string, error) {
	l, err := d.govLayout(ctx)
	if err != nil {
		return nil, err
	}
	if err := governor.Validate(l, p); err != nil {
		return nil, err
	}
	if err := d.beginGovernor(ctx, l); err != nil {
		return nil, err
	}
	mis, err := governor.Apply(ctx, d, d, l, p)
	if err != nil {
		return mis, err
	}
	d.mu.Lock()
	d.applied = &p
	d.mu.Unlock()
	return mis, nil
}

// SetBuiltins sets how profile names the device knows besides tuned ones
// (controls.governor "recommended", ...) are resolved; nil knows none.
// Call it before Setup.
func (d *Device) SetBuiltins(r governor.Resolver) {
	d.mu.Lock()
	d.builtins = r
	d.mu.Unlock()
}

func (d *Device) builtinProfiles() governor.Resolver {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.builtins
}

// CheckBuilds says, without touching the phone, whether every build of exp
// names an app (lab.BuildChecker): a package and an activity, given or read
// from the APK's manifest. Setup makes the same check; whether the package
// is installed is only known there.
func (d *Device) CheckBuilds(exp *lab.Experiment) error {
	if CommandBuilds(exp) {
		return nil // a command for the phone's shell (commands.go)
	}
	for _, k := range slices.Sorted(maps.Keys(exp.Builds)) {
		if _, err := buildApp(k, exp.Builds[k]); err != nil {
			return err
		}
	}
	return nil
}

var _ lab.BuildChecker = (*Device)(nil)

// buildApp is the package and activity build key runs: its own fields, or
// its APK's manifest for those it leaves out.
func buildApp(key string, b lab.Build) (appBuild, error) {
	ab := appBuild{Package: b.Package, Activity: b.Activity}
	if b.APK != "" && (ab.Package == "" || ab.Activity == "") {
		m, err := apk.Read(b.APK)
		if err != nil {
			return ab, fmt.Errorf("builds.%s.apk: %w (or set \"package\" and \"activity\")", key, err)
		}
		if ab.Package == "" {
			ab.Package = m.Package
		}
		if ab.Activity == "" {
			ab.Activity = m.Launcher
		}
	}
	if ab.Package == "" {
		return ab, fmt.Errorf("builds.%s.package: empty; a build on an adb device is an Android app: set \"apk\", or \"package\" and \"activity\"", key)
	}
	if ab.Activity == "" {
		return ab, fmt.Errorf("builds.%s.activity: empty for %s: set \"activity\", e.g. \".MainActivity\"", key, ab.Package)
	}
	return ab, nil
}

// resolveBuild finds the package and activity a build runs, installing its
// APK if it has one.
func (d *Device) resolveBuild(ctx context.Context, key string, b lab.Build) (appBuild, error) {
	ab, err := buildApp(key, b)
	if err != nil {
		return ab, err
	}
	if b.APK != "" {
		if err := d.installAPK(ctx, key, b.APK); err != nil {
			return ab, fmt.Errorf("builds.%s.apk: %w", key, err)
		}
	}
	if _, err := d.c.Run(ctx, d.serial, "pm path "+shquote.Quote(ab.Package)); err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return ab, fmt.Errorf("builds.%s: package %s is not installed on %s", key, ab.Package, d.serial)
		}
		return ab, err
	}
	return ab, nil
}

// installAPK pushes an APK and installs it with pm install -r.
func (d *Device) installAPK(ctx context.Context, key, apk string) error {
	f, err := os.Open(apk)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	remote := path.Join(TmpDir, "perflab-"+key+".apk")
	if err := d.c.Push(ctx, d.serial, f, remote, 0o644, st.ModTime()); err != nil {
		return err
	}
	if err := d.checkPushed(ctx, remote, st.Size()); err != nil {
		return err
	}
	out, err := d.c.Run(ctx, d.serial, "pm install -r -t "+shquote.Quote(remote))
	if err != nil || !strings.Contains(out, "Success") {
		return fmt.Errorf("pm install %s: %s %v", apk, strings.TrimSpace(out), err)
	}
	return nil
}

// checkPushed compares the size of a pushed file on the phone (sync LIST)
// with the size sent, so a truncated push is reported as such rather than
// as a corrupt APK by pm. A phone that cannot list the directory is taken
// at its word.
func (d *Device) checkPushed(ctx context.Context, remote string, size int64) error {
	fi, err := d.c.Stat(ctx, d.serial, remote)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("push %s: the file is not on the phone after the push", remote)
	case err != nil:
		return nil
	case fi.Size != size%(1<<32): // sync LIST sizes have 32 bits
		return fmt.Errorf("push %s: %d bytes arrived of %d", remote, fi.Size, size)
	}
	return nil
}

// rootControls are the controls that need root.
func rootControls(c lab.Controls) []string {
	var need []string
	raw := strings.TrimSpace(string(c.Governor))
	if raw != "" && raw != `""` && raw != `"stock"` && raw != `"off"` && raw != "null" {
		need = append(need, "governor")
	}
	for _, x := range []struct {
		on   bool
		name string
	}{{c.RestoreSnapshot, "restore_snapshot"}, {c.ClockReset, "clock_reset"}, {c.Tmpfs, "tmpfs"}, {c.DropCaches, "drop_caches"}} {
		if x.on {
			need = append(need, x.name)
		}
	}
	return need
}

// CheckControls says, without touching the phone, whether it can apply
// the controls of exp (lab.ControlsChecker): checkControls, which every
// trial makes again for the controls it is given, then controls.governor
// names a profile this phone knows. Setup makes this check first; whether
// the phone takes the profile is only learnt there.
func (d *Device) CheckControls(exp *lab.Experiment) error {
	if err := d.checkControls(exp.Controls); err != nil {
		return err
	}
	_, err := governor.Resolve(exp.Controls.Governor, d.Info().Model, d.builtinProfiles())
	return err
}

var _ lab.ControlsChecker = (*Device)(nil)

// checkControls says whether the phone can apply c, from what Open learnt:
// root for the controls that need it (rootControls), and adb reverse to
// this host for the proxy (a remote adb server needs --ssh).
func (d *Device) checkControls(c lab.Controls) error {
	if need := rootControls(c); len(need) > 0 && d.rootVia == "" {
		verb := "needs"
		if len(need) > 1 {
			verb = "need"
		}
		return fmt.Errorf("controls.%s: %s root, and adbd is not root and su is missing: %w", strings.Join(need, ", controls."), verb, lab.ErrUnsupported)
	}
	if mode := proxy.Mode(c); mode != proxy.ModeOff && !d.appMetricsReach() {
		return fmt.Errorf("controls.proxy %q: %w (%w)", mode, lab.ErrUnsupported, d.c.remoteErr("the record/replay proxy"))
	}
	return nil
}

// Setup installs or finds the builds, applies the governor profile,
// snapshots the apps' data, notes the clock, opens the metric listener
// behind adb reverse and, when controls.proxy is record or replay, starts
// the record/replay proxy and points the phone's http_proxy at it through
// adb reverse (see proxy.go).
func (d *Device) Setup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	if CommandBuilds(exp) {
		return d.cmdSetup(ctx, exp)
	}
	if err := d.CheckMetrics(exp); err != nil {
		return nil, err
	}
	if err := d.CheckControls(exp); err != nil {
		return nil, err
	}
	mode := proxy.Mode(exp.Controls)
	// A previous run's proxy (its recording file, its wiring) goes first.
	if err := d.closeProxy(ctx); err != nil {
		return nil, fmt.Errorf("device %s: %w", d.serial, err)
	}
	d.mu.Lock()
	d.exp = exp
	d.mu.Unlock()
	events, err := d.setup(ctx)
	if err != nil || mode == proxy.ModeOff {
		return events, err
	}
	c, err := d.syncProxy(ctx, mode)
	if err != nil {
		return events, fmt.Errorf("controls.proxy: %w", err)
	}
	events = append(events, lab.Event{Type: lab.EventSettings, Settings: &lab.Settings{Detail: d.proxyDetail(c)}})
	return events, nil
}

func (d *Device) setup(ctx context.Context) ([]lab.Event, error) {
	d.mu.Lock()
	exp := d.exp
	d.mounted = map[string]bool{}
	d.applied, d.govRaw = nil, ""
	d.mu.Unlock()
	var events []lab.Event
	builds := map[string]appBuild{}
	keys := make([]string, 0, len(exp.Builds))
	for k := range exp.Builds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ab, err := d.resolveBuild(ctx, k, exp.Builds[k])
		if err != nil {
			return events, err
		}
		builds[k] = ab
	}
	d.mu.Lock()
	d.builds = builds
	d.mu.Unlock()

	ev, err := d.applyGovernor(ctx, exp.Controls.Governor)
	events = append(events, ev...)
	if err != nil {
		return events, err
	}
	if d.rootVia != "" {
		// Snapshot every app's data (MobileLab's copy procedure).
		var cmd []string
		cmd = append(cmd, "mkdir -p "+SnapshotDir)
		for _, ab := range builds {
			p := shquote.Quote(ab.Package)
			cmd = append(cmd, "am force-stop "+p, "rm -rf "+SnapshotDir+"/"+p, "cp -a /data/data/"+p+" "+SnapshotDir+"/")
		}
		if _, err := d.runRoot(ctx, strings.Join(cmd, " && ")); err != nil {
			return events, fmt.Errorf("snapshot of the apps' data: %w", err)
		}
		out, err := d.c.Run(ctx, d.serial, "date +%s")
		if err != nil {
			return events, err
		}
		sec, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			return events, fmt.Errorf("device clock: date +%%s printed %q", out)
		}
		d.mu.Lock()
		if d.clock0.IsZero() {
			d.clock0 = time.Unix(sec, 0).UTC()
		}
		d.mu.Unlock()
	}
	if !d.appMetricsReach() {
		// Only am start -W's metrics are measured; Setup refused an
		// experiment naming others (CheckMetrics).
		return events, nil
	}
	if err := d.openMetrics(ctx); err != nil {
		return events, err
	}
	return events, nil
}

func (d *Device) applyGovernor(ctx context.Context, raw json.RawMessage) ([]lab.Event, error) {
	d.mu.Lock()
	same := d.govRaw == string(raw) && d.applied != nil
	d.mu.Unlock()
	if same {
		return nil, nil
	}
	p, err := governor.Resolve(raw, d.Info().Model, d.builtinProfiles())
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, nil
	}
	mis, err := d.ApplyProfile(ctx, *p)
	if err != nil {
		return nil, fmt.Errorf("governor profile %q: %w", p.Name, err)
	}
	d.mu.Lock()
	d.govRaw = string(raw)
	d.mu.Unlock()
	read, rerr := d.ReadProfile(ctx)
	if rerr != nil {
		read = *p
	}
	ev := lab.Event{Type: lab.EventSettings, Settings: &lab.Settings{Profile: &read, Mismatches: mis,
		Detail: map[string]string{"governor": governor.Describe(*p), "via": d.rootVia}}}
	return []lab.Event{ev}, nil
}

// amMetrics are the metrics am start -W measures on every launch.
var amMetrics = []string{MetricTotalTime, MetricWaitTime}

// CheckMetrics says, without touching the phone, whether the metrics exp
// asks for can come back (lab.MetricChecker): am start -W's always; any
// other is the app's own, reported over adb reverse, which cannot reach
// this host from an adb server on another one without a tunnel. Setup
// makes the same check first.
func (d *Device) CheckMetrics(exp *lab.Experiment) error {
	if d.appMetricsReach() {
		return nil
	}
	for i, m := range exp.Metrics {
		if !slices.Contains(amMetrics, m) {
			return fmt.Errorf("metrics[%d]: %q is not measured here (known: %v): %w", i, m, amMetrics, d.c.remoteErr("the app's own metrics over adb reverse"))
		}
	}
	return nil
}

var _ lab.MetricChecker = (*Device)(nil)

// appMetricsReach says whether the app's own metrics can reach this host
// through adb reverse: the adb server is on this host, or on one perflab
// has a tunnel to.
func (d *Device) appMetricsReach() bool {
	return !d.c.Remote() || d.c.Tunnel != nil
}

// metricListener accepts the app's connections (through adb reverse) and
// collects PERFLAB_METRIC lines, and PERFLAB_SPAN lines: the app's phases.
type metricListener struct {
	ln   net.Listener
	port int // where the phone connects (adb reverse tcp:port tcp:port), on the adb server's host
	// unexpose ends the relay from the adb server's host (a remote one).
	unexpose func() error

	mu      sync.Mutex
	cond    *sync.Cond
	open    int // connections being read
	seen    int // connections accepted since reset
	metrics []lab.Metric
	bad     []string
	spans   lab.SpanLog
	badSpan []string
}

func (d *Device) openMetrics(ctx context.Context) error {
	d.mu.Lock()
	m := d.metrics
	d.mu.Unlock()
	if m == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("metric listener: %w", err)
		}
		port, unexpose, err := d.c.exposeLocal("app metrics over adb reverse", ln.Addr().(*net.TCPAddr).Port)
		if err != nil {
			ln.Close()
			return err
		}
		m = &metricListener{ln: ln, port: port, unexpose: unexpose}
		m.cond = sync.NewCond(&m.mu)
		go m.serve()
		d.mu.Lock()
		d.metrics = m
		d.mu.Unlock()
	}
	// The same port number on both sides keeps concurrent runs apart.
	if err := d.c.Reverse(ctx, d.serial, m.port, m.port); err != nil {
		return fmt.Errorf("adb reverse for app metrics: %w", err)
	}
	return nil
}

func (m *metricListener) serve() {
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			return
		}
		m.mu.Lock()
		m.open++
		m.seen++
		m.mu.Unlock()
		go func() {
			defer conn.Close()
			sc := bufio.NewScanner(conn)
			for sc.Scan() {
				line := sc.Text()
				if lab.SpanStart([]byte(strings.TrimSpace(line))) {
					m.mu.Lock()
					if err := m.spans.Add(strings.TrimSpace(line)); err != nil {
						m.badSpan = append(m.badSpan, err.Error())
					}
					m.mu.Unlock()
					continue
				}
				if !lab.IsMetricLine(line) {
					continue
				}
				mt, err := lab.ParseMetricLine(line)
				m.mu.Lock()
				if err != nil {
					m.bad = append(m.bad, err.Error())
				} else {
					m.metrics = append(m.metrics, mt)
				}
				m.mu.Unlock()
			}
			m.mu.Lock()
			m.open--
			m.cond.Broadcast()
			m.mu.Unlock()
		}()
	}
}

func (m *metricListener) reset() {
	m.mu.Lock()
	m.seen, m.metrics, m.bad, m.spans, m.badSpan = 0, nil, nil, lab.SpanLog{}, nil
	m.mu.Unlock()
}

// appReport is what the app sent over the metrics port in a trial.
type appReport struct {
	metrics []lab.Metric
	bad     []string // malformed metric lines
	spans   []lab.Span
	badSpan []string // malformed span lines
}

// collect waits until a connection came and all are closed, or wait
// passes, and returns what arrived.
func (m *metricListener) collect(ctx context.Context, wait time.Duration) appReport {
	deadline := time.Now().Add(wait)
	t := time.AfterFunc(wait, func() { m.mu.Lock(); m.cond.Broadcast(); m.mu.Unlock() })
	defer t.Stop()
	stop := context.AfterFunc(ctx, func() { m.mu.Lock(); m.cond.Broadcast(); m.mu.Unlock() })
	defer stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for (m.seen == 0 || m.open > 0) && time.Now().Before(deadline) && ctx.Err() == nil {
		m.cond.Wait()
	}
	return appReport{metrics: append([]lab.Metric(nil), m.metrics...), bad: append([]string(nil), m.bad...),
		spans: m.spans.Spans(), badSpan: append([]string(nil), m.badSpan...)}
}

var amLine = regexp.MustCompile(`(?m)^(TotalTime|WaitTime|Status|LaunchState):\s*(\S+)`)

// ParseAmStart reads am start -W output.
func ParseAmStart(out string) (total, wait float64, err error) {
	total, wait = -1, -1
	for _, m := range amLine.FindAllStringSubmatch(out, -1) {
		switch m[1] {
		case "Status":
			if m[2] != "ok" {
				return 0, 0, fmt.Errorf("am start: Status: %s", m[2])
			}
		case "TotalTime":
			total, err = strconv.ParseFloat(m[2], 64)
		case "WaitTime":
			wait, err = strconv.ParseFloat(m[2], 64)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("am start: bad %s %q", m[1], m[2])
		}
	}
	if total < 0 {
		return 0, 0, fmt.Errorf("am start printed no TotalTime: %q", strings.TrimSpace(out))
	}
	return total, wait, nil
}

// RunTrial runs the reset procedure the controls ask for, launches the
// build's activity with am start -W and gathers TotalTime, WaitTime and
// the metrics the app reports over adb reverse. With controls.proxy on,
// the phone's HTTP traffic goes through the record/replay proxy and a
// request the recording cannot answer fails the trial (proxy.Controller);
// turned off between rounds, the phone gets its own proxy setting back.
func (d *Device) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	cmd := d.cmdMode
	d.mu.Unlock()
	if cmd {
		return d.cmdTrial(ctx, req)
	}
	if err := d.checkControls(req.Controls); err != nil {
		return d.fail(err, "reset")
	}
	c, err := d.syncProxy(ctx, proxy.Mode(req.Controls))
	if err != nil {
		return d.fail(err, "proxy")
	}
	if c == nil {
		return d.runTimed(ctx, req)
	}
	return c.Trial(req, func() lab.TrialResult { return d.runTimed(ctx, req) })
}

// runTimed runs one trial within the experiment's trial_timeout.
func (d *Device) runTimed(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	timeout := 0.0
	if d.exp != nil {
		timeout = d.exp.TrialTimeout
	}
	d.mu.Unlock()
	tctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, time.Duration(timeout*float64(time.Second)))
		defer cancel()
	}
	res := d.runTrial(tctx, req)
	if ctx.Err() == nil && (tctx.Err() != nil || timeout > 0 && pastDeadline(tctx)) {
		return lab.TrialResult{Status: lab.StatusTimeout, Reason: fmt.Sprintf("exceeded trial_timeout of %gs", timeout), Metrics: []lab.Metric{}}
	}
	if res.Status != lab.StatusOK && res.Lost {
		d.mu.Lock()
		d.lost = true
		d.mu.Unlock()
	}
	return res
}

// pastDeadline reports whether ctx's deadline has passed. A trial that
// ends past trial_timeout is a timeout even when it got through before the
// context's timer fired: on a loaded host the timer can fire late, and
// ctx.Err() stays nil until it does.
func pastDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// Fail is the result of a trial that failed at step what with err: Lost
// when the device or its adb server went away.
func (d *Device) Fail(err error, what string) lab.TrialResult { return d.fail(err, what) }

func (d *Device) fail(err error, what string) lab.TrialResult {
	r := lab.TrialResult{Status: lab.StatusFailed, Reason: what + ": " + err.Error()}
	if errors.Is(err, ErrDeviceLost) || errors.Is(err, ErrNoServer) {
		r.Lost = true
		r.Reason = "device lost during " + what + ": " + err.Error()
	}
	return r
}

func (d *Device) runTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	ab, ok := d.builds[req.BuildKey]
	m := d.metrics
	d.mu.Unlock()
	if !ok {
		return lab.TrialResult{Status: lab.StatusFailed, Reason: "build " + req.BuildKey + " was not set up"}
	}
	if err := d.reset(ctx, req.Controls, ab); err != nil {
		return d.fail(err, "reset")
	}
	cmd := fmt.Sprintf("am start -W -n %s", shquote.Quote(ab.Package+"/"+ab.Activity))
	if m != nil {
		m.reset()
		cmd += fmt.Sprintf(" --ei %s %d", MetricsPortExtra, m.port)
	}
	var rec *record
	var prof *lab.Profile
	var profNote string
	if req.Profile {
		// simpleperf samples the app from before it starts.
		rec, profNote = d.startRecord(ctx, ab.Package, req.Index)
	}
	out, err := d.c.Run(ctx, d.serial, cmd)
	if rec != nil {
		prof, profNote = rec.stop(ctx, err == nil)
	}
	if err != nil {
		return d.fail(err, "am start")
	}
	total, wait, err := ParseAmStart(out)
	if err != nil {
		return lab.TrialResult{Status: lab.StatusFailed, Reason: err.Error()}
	}
	metrics := []lab.Metric{{Name: MetricTotalTime, Value: total, Unit: "ms", Better: "lower"}}
	if wait >= 0 {
		metrics = append(metrics, lab.Metric{Name: MetricWaitTime, Value: wait, Unit: "ms", Better: "lower"})
	}
	if m != nil && (wantsAppMetrics(req.Metrics) || prof != nil) {
		app := m.collect(ctx, d.MetricsWait)
		if len(app.bad) > 0 {
			return lab.TrialResult{Status: lab.StatusFailed, Reason: "malformed metric line from the app: " + app.bad[0], Metrics: metrics}
		}
		metrics = append(metrics, app.metrics...)
		if prof != nil {
			prof.Spans = app.spans
			if len(app.badSpan) > 0 {
				// The phases are lost, not the trial.
				prof.Spans = nil
				profNote = joinNotes(profNote, fmt.Sprintf("phases lost: malformed span line from the app: %s", app.badSpan[0]))
			}
		}
	}
	res := filterMetrics(metrics, req.Metrics)
	if req.Profile {
		res.Profile, res.ProfileNote = prof, profNote
	}
	return res
}

func wantsAppMetrics(want []string) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if !slices.Contains(amMetrics, w) {
			return true
		}
	}
	return false
}

// filterMetrics keeps the requested metrics (all when none are named) and
// fails the trial when one is missing.
func filterMetrics(ms []lab.Metric, want []string) lab.TrialResult {
	if len(want) == 0 {
		return lab.TrialResult{Status: lab.StatusOK, Metrics: ms}
	}
	var out []lab.Metric
	for _, w := range want {
		found := false
		for _, m := range ms {
			if m.Name == w {
				out = append(out, m)
				found = true
				break
			}
		}
		if !found {
			have := make([]string, len(ms))
			for i, m := range ms {
				have[i] = m.Name
			}
			return lab.TrialResult{Status: lab.StatusFailed, Metrics: ms,
				Reason: fmt.Sprintf("metric %s not reported (got: %s; the app reports its own over adb reverse as PERFLAB_METRIC lines)", w, strings.Join(have, ", "))}
		}
	}
	return lab.TrialResult{Status: lab.StatusOK, Metrics: out}
}

// reset runs the reset procedure before a trial, in MobileLab's order:
// governor, kill, dismiss dialogs, restore the data snapshot (onto tmpfs
// when asked), reset the clock, proxy, drop caches.
func (d *Device) reset(ctx context.Context, c lab.Controls, ab appBuild) error {
	// RunTrial checked c (checkControls).
	if _, err := d.applyGovernor(ctx, c.Governor); err != nil {
		return err
	}
	pkg := shquote.Quote(ab.Package)
	if c.KillApp {
		if _, err := d.c.Run(ctx, d.serial, "am force-stop "+pkg); err != nil {
			return err
		}
	}
	if c.DismissDialogs {
		if err := d.dismissDialogs(ctx); err != nil {
			return err
		}
	}
	var root []string
	d.mu.Lock()
	mounted := d.mounted[ab.Package]
	clock0 := d.clock0
	d.mu.Unlock()
	data := "/data/data/" + pkg
	switch {
	case c.Tmpfs && !mounted:
		// The mount point must keep the app's owner and SELinux label,
		// or the app cannot write its own data.
		owner, err := d.runRoot(ctx, "stat -c %u:%g "+data)
		if err != nil {
			return err
		}
		// The mount's source names this perflab process, so a later one can
		// unmount it if this one dies (see unmountLeftovers).
		root = append(root, "mount -t tmpfs -o mode=0700 "+shquote.Quote(governor.OwnerTag())+" "+data+" && chown "+shquote.Quote(strings.TrimSpace(owner))+" "+data+
			" && restorecon -R "+data)
	case !c.Tmpfs && mounted:
		root = append(root, "umount "+data)
	}
	if c.RestoreSnapshot {
		// rm -rf cannot remove a tmpfs mount point (it empties it), so
		// its status is ignored; cp -a's is not.
		root = append(root, "rm -rf "+data+"; cp -a "+SnapshotDir+"/"+pkg+" /data/data/ && restorecon -R "+data)
	}
	if c.ClockReset && !clock0.IsZero() {
		root = append(root, "date -u "+clock0.Format("010215042006.05"))
	}
	if c.DropCaches {
		root = append(root, "sync; echo 3 > /proc/sys/vm/drop_caches")
	}
	// One command line per step: its exit status is its last command's.
	for _, r := range root {
		if _, err := d.runRoot(ctx, r); err != nil {
			return err
		}
	}
	if len(root) > 0 {
		d.mu.Lock()
		if c.Tmpfs != mounted {
			d.mounted[ab.Package] = c.Tmpfs
		}
		d.mu.Unlock()
	}
	return nil
}

// dismissDialogs presses BACK while a crash or ANR dialog has focus.
func (d *Device) dismissDialogs(ctx context.Context) error {
	for i := 0; i < 5; i++ {
		out, err := d.c.Run(ctx, d.serial, "dumpsys window windows | grep mCurrentFocus")
		var ee *ExitError
		if err != nil && !errors.As(err, &ee) {
			return err
		}
		if !strings.Contains(out, "Application Error") && !strings.Contains(out, "Application Not Responding") &&
			!strings.Contains(out, "isn't responding") {
			return nil
		}
		if _, err := d.c.Run(ctx, d.serial, "input keyevent KEYCODE_BACK"); err != nil {
			return err
		}
	}
	return errors.New("a system dialog stays on screen after 5 BACK presses")
}

// Reconnect waits for a lost device to come back (ReconnectTimeout at
// most), then redoes what a restart loses: reverse, governor, snapshot.
func (d *Device) Reconnect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.ReconnectTimeout)
	defer cancel()
	for {
		es, err := d.c.Devices(ctx)
		if err == nil {
			for _, e := range es {
				if e.Serial == d.serial && e.State == "device" {
					if _, err := d.c.Run(ctx, d.serial, "true"); err == nil {
						d.mu.Lock()
						d.lost = false
						d.layout = nil
						hp := d.hp
						d.mu.Unlock()
						if hp != nil {
							// A restart loses the reverse: the next
							// trial wires the proxy again.
							d.pxMu.Lock()
							hp.wired = false
							d.pxMu.Unlock()
						}
						_, err := d.setup(ctx)
						return err
					}
				}
			}
		}
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("device %s did not come back within %v", d.serial, d.ReconnectTimeout)
		case <-t.C:
		}
	}
}

// Close restores the original governor settings (unless the profile says
// keep), unmounts tmpfs, removes the reverse and the snapshot.
func (d *Device) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmdErr := d.cmdClose(ctx)
	d.mu.Lock()
	m, mounted, builds := d.metrics, d.mounted, d.builds
	d.metrics = nil
	d.mu.Unlock()
	var errs []error
	if cmdErr != nil {
		errs = append(errs, fmt.Errorf("removing the worker's folder: %w", cmdErr))
	}
	if err := d.closeGovernor(ctx); err != nil {
		errs = append(errs, err)
	}
	var cmds []string
	for pkg, on := range mounted {
		if on {
			cmds = append(cmds, "umount /data/data/"+shquote.Quote(pkg))
		}
	}
	if len(builds) > 0 && d.rootVia != "" {
		cmds = append(cmds, "rm -rf "+SnapshotDir)
	}
	if len(cmds) > 0 {
		if _, err := d.runRoot(ctx, strings.Join(cmds, "; ")); err != nil {
			errs = append(errs, err)
		}
	}
	if m != nil {
		d.c.ReverseRemove(ctx, d.serial, m.port)
		m.ln.Close()
		m.unexpose()
	}
	if err := d.closeProxy(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
