// Package devices opens a device by its ID ("local", "sim:<preset>",
// "adb:<serial>", "ssh://HOST") and lists the devices every backend can reach.
package devices

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devlock"
	"github.com/perflab/perflab/lab/local"
)

// Options configure the backends.
type Options struct {
	ADBServers []string // adb servers as host:port; empty means the default server
	// Tunnels reach remote adb servers over SSH (nil: none); OpenTunnels.
	Tunnels  *Tunnels
	Realtime bool  // pace simulated devices at wall-clock speed
	Seed     int64 // seed for simulated devices
	// SSHConfig is the ssh configuration file ssh workers read (ssh -F;
	// "": the user's ~/.ssh/config).
	SSHConfig string
	// PinWorkers, when > 0, pins the local workers local, local#2, ...
	// each to its own CPUs, the host's split into PinWorkers sets.
	PinWorkers int
	// Host, when set, is this host's shared lock, taken when a local
	// device is first opened (nil: none taken).
	Host *HostShare
}

// HostShare is this host's lock as its local devices take it: shared
// (devlock.Share of "local" in Dir), by the first open of a local device,
// and held until the process ends. Experiments started by hand share the
// host as they always have; a perflab watch, which takes the lock whole
// (devlock.Take), runs on it alone.
type HostShare struct {
	Dir  string
	mu   sync.Mutex
	lock *devlock.Lock
}

// take takes the shared lock unless held already: a refusal (a watch
// holds the host) is tried again at the next open, so a workbench goes on
// once the watch has ended.
func (h *HostShare) take() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lock != nil {
		return nil
	}
	var err error
	h.lock, err = devlock.Share(h.Dir, "local")
	return err
}

// backend is one kind of device. To add one, write its open and list
// functions in this package (one file per backend) and add a line to
// backends.
type backend struct {
	name string
	// open opens the device whose ID is name + ":" + arg (arg is "" for "local").
	open func(ctx context.Context, arg string, opt Options) (lab.Device, error)
	// list returns the devices the backend can reach; an error is reported
	// as a note, it does not hide the other backends' devices.
	list func(ctx context.Context, opt Options) ([]lab.DeviceInfo, error)
	// static describes the device name + ":" + arg without any I/O, when
	// the backend can (nil: it cannot).
	static func(arg string) (lab.DeviceInfo, bool)
}

func backends() []backend {
	return []backend{
		{name: "local", open: openLocal, list: listLocal},
		{name: "sim", open: openSim, list: listSim, static: staticSim},
		{name: "adb", open: openADB, list: listADB},
		{name: "ssh", open: openSSH, list: listSSH},
	}
}

// Open opens the device with the given ID.
func Open(ctx context.Context, id string, opt Options) (lab.Device, error) {
	name, arg, _ := strings.Cut(strings.TrimSpace(id), ":")
	if IsLocal(name) {
		if err := opt.Host.take(); err != nil {
			return nil, err
		}
	}
	if n, ok := localWorker(name); ok && arg == "" {
		if opt.PinWorkers > 0 {
			return local.PinnedWorker(n, opt.PinWorkers), nil
		}
		return local.NewWorker(n), nil
	}
	var names []string
	for _, b := range backends() {
		if b.name == name {
			return b.open(ctx, arg, opt)
		}
		names = append(names, b.name)
	}
	if id == "" {
		return nil, errors.New("no device given")
	}
	return nil, fmt.Errorf("device %q: unknown backend %q (known: %s)", id, name, strings.Join(names, ", "))
}

// Static describes the device with the given ID without opening it or
// doing any I/O, when its backend can (a simulated phone); ok is false
// otherwise. A study uses it to decide up front, from the device's
// capabilities, how to treat it.
func Static(id string) (info lab.DeviceInfo, ok bool) {
	name, arg, _ := strings.Cut(strings.TrimSpace(id), ":")
	for _, b := range backends() {
		if b.name == name && b.static != nil {
			return b.static(arg)
		}
	}
	return lab.DeviceInfo{}, false
}

// List returns every device of every backend, sorted by ID. A backend that
// fails to list contributes an error, joined into the returned error, while
// the other backends' devices are still returned.
func List(ctx context.Context, opt Options) ([]lab.DeviceInfo, error) {
	var out []lab.DeviceInfo
	var errs []error
	for _, b := range backends() {
		infos, err := b.list(ctx, opt)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
		}
		out = append(out, infos...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errors.Join(errs...)
}
