package adb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devlock"
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

	lock *devlock.Lock // one perflab at a time on the phone, from Open to Close
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
			lk, err := lockPhone(serial)
			if err != nil {
				return nil, err
			}
			d := &Device{c: c, serial: serial, ReconnectTimeout: 90 * time.Second, MetricsWait: 3 * time.Second, lock: lk}
			if err := d.probe(ctx, e, false); err != nil {
				lk.Release()
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
	if err := d.lock.Release(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// lockPhone takes the phone's lock (in the state folder's locks/, beside
// the governor crash records): two experiments on one phone at once would
// measure each other, and each would restore the other's settings. A
// second perflab that opens the phone is refused with the holder's pid and
// command; listing the phone (perflab devices, the pickers) takes no lock.
func lockPhone(serial string) (*devlock.Lock, error) {
	dir, err := governor.StateDir()
	if err != nil {
		return nil, err
	}
	// This perflab's own earlier use of the phone may still be closing
	// (Close restores its settings, for up to a minute): wait for it.
	return devlock.TakeOwn(filepath.Join(dir, "locks"), "adb:"+serial, devlock.Holder(), 90*time.Second)
}
