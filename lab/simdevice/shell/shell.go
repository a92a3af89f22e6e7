// Package shell is the simulated phone's command interpreter: mksh's
// language, parsed and run by mvdan.cc/sh (syntax and interp, with no
// globbing and no background jobs), over an in-memory file system, with the toybox and framework commands perflab
// and engineers use on a phone: cat, echo, getprop/setprop, stop/start,
// chmod, rm -rf, cp -a, mount -t tmpfs, date, am, pm, input, dumpsys, sync,
// su -c, and running pushed executables after an ELF/ABI check. Anything
// else is answered as Android does ("inaccessible or not found", 127).
//
// What the hardware and framework do is delegated to a Phone.
package shell

import (
	"context"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab/sim"
)

// System is the simulated phone's kernel, file system, properties,
// services and clock; *sim.Phone implements it.
type System interface {
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte) error
	AppendFile(name string, data []byte) error
	Stat(name string) (sim.FileInfo, error)
	ReadDir(name string) ([]sim.FileInfo, error)
	MkdirAll(name string) error
	RemoveAll(name string) error
	Copy(src, dst string) error
	Chmod(name string, mode fs.FileMode) error
	MountTmpfsFrom(source, target string) error
	Unmount(target string) error
	Mounts() []sim.Mount
	Now() time.Time
	SetClock(t time.Time)
	Prop(key string) string
	Props() map[string]string
	SetProp(key, value string) error
	SetService(name string, run bool) error
}

// Phone is the whole simulated phone behind the shell: the System plus the
// package manager, activity and window managers, and the probe. The
// simdevice adapts *sim.Phone to it.
type Phone interface {
	System
	// ABIs lists supported ABIs, primary first ("arm64-v8a", "armeabi-v7a").
	ABIs() []string
	// InstallAPK installs the package an APK file holds and returns its name.
	InstallAPK(apk []byte) (pkg string, err error)
	Packages() []string
	PackagePath(pkg string) (string, error)
	ClearData(pkg string) error
	Uninstall(pkg string) error
	ForceStop(pkg string)
	Running(pkg string) bool
	// Launch starts an app's activity (am start) and reports its timing.
	Launch(ctx context.Context, req LaunchRequest) (LaunchResult, error)
	// Dialogs lists system dialogs on screen as window titles.
	Dialogs() []string
	// DismissDialogs closes them (BACK key, CLOSE_SYSTEM_DIALOGS).
	DismissDialogs() int
	// Advance lets simulated time pass with the phone idle.
	Advance(d time.Duration)
	// Probe runs the MFLOPS probe with the probe program's arguments,
	// writing what the real program prints, until done or ctx ends.
	Probe(ctx context.Context, args []string, out io.Writer) error
}

// LaunchRequest is an activity start.
type LaunchRequest struct {
	Package, Activity string
	Extras            map[string]string // --es/--ei/--ef/--ez extras
}

// LaunchResult is what am start -W prints.
type LaunchResult struct {
	Activity            string // package/activity as started
	State               string // COLD, WARM, HOT
	TotalTime, WaitTime time.Duration
}

// Shell is one simulated device's interpreter.
type Shell struct {
	FS    files
	Phone Phone
	// Root makes adbd run as root (uid 0) instead of shell (uid 2000).
	Root bool

	mu        sync.Mutex
	focus     string
	overrides map[string]string
	lastPid   int
	procs     map[int]*proc // running commands kill can signal
}

// New returns a shell over phone.
func New(phone Phone) *Shell {
	return &Shell{FS: files{phone}, Phone: phone}
}

// Prop returns a system property.
func (sh *Shell) Prop(name string) string {
	sh.mu.Lock()
	v, ok := sh.overrides[name]
	sh.mu.Unlock()
	if ok {
		return v
	}
	return sh.Phone.Prop(name)
}

// SetPropOverride makes getprop answer value for name (used for values the
// phone model fixes at boot, such as ro.serialno).
func (sh *Shell) SetPropOverride(name, value string) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.overrides == nil {
		sh.overrides = map[string]string{}
	}
	sh.overrides[name] = value
}

func (sh *Shell) props() map[string]string {
	m := sh.Phone.Props()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for k, v := range sh.overrides {
		m[k] = v
	}
	return m
}

func isKernelPath(p string) bool {
	return strings.HasPrefix(p, "/sys/") || strings.HasPrefix(p, "/proc/") || p == "/sys" || p == "/proc"
}

// readPath reads a file from the kernel model or the file system.
func (e *env) readPath(p string) ([]byte, error) {
	return e.sh.FS.ReadFile(Clean(e.cwd, p))
}
