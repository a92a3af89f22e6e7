// Package shell is the simulated phone's command interpreter: a small
// mksh-like language (quotes, $VAR, ;, &&, ||, |, redirections) over an
// in-memory file system, with the toybox and framework commands perflab
// and engineers use on a phone: cat, echo, getprop/setprop, stop/start,
// chmod, rm -rf, cp -a, mount -t tmpfs, date, am, pm, input, dumpsys, sync,
// su -c, and running pushed executables after an ELF/ABI check. Anything
// else is answered as Android does ("inaccessible or not found", 127).
//
// What the hardware and framework do is delegated to a Phone.
package shell

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
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

// env is the state of one running shell (one adb shell command, or a
// nested sh -c / su -c).
type env struct {
	sh     *Shell
	ctx    context.Context
	pid    int // $$
	uid    int
	cwd    string
	vars   map[string]string
	status int
	exited bool // exit ran: stop this shell (or subshell)
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// Run executes a command line as adbd's user and returns the exit status.
func (sh *Shell) Run(ctx context.Context, cmdline string, stdin io.Reader, stdout, stderr io.Writer) int {
	uid := 2000
	if sh.Root {
		uid = 0
	}
	e := &env{sh: sh, ctx: ctx, pid: sh.newPid(), uid: uid, cwd: "/", vars: map[string]string{
		"PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin:/system/xbin:/vendor/bin",
		"HOME": "/", "SHELL": "/system/bin/sh", "TMPDIR": "/data/local/tmp",
	}, stdin: stdin, stdout: stdout, stderr: stderr}
	return e.runLine(cmdline)
}

func (e *env) errf(format string, args ...any) {
	fmt.Fprintf(e.stderr, format, args...)
}

func (e *env) runLine(line string) int {
	toks, err := lex(line)
	if err != nil {
		e.errf("/system/bin/sh: %v\n", err)
		return 2
	}
	list, err := parse(toks)
	if err != nil {
		e.errf("/system/bin/sh: %v\n", err)
		return 2
	}
	return e.runList(list)
}

// runList runs and-or lists until the end or exit.
func (e *env) runList(list []andOr) int {
	for _, ao := range list {
		if e.ctx.Err() != nil {
			return 130
		}
		if e.exited {
			break
		}
		if ao.op == "&&" && e.status != 0 || ao.op == "||" && e.status == 0 {
			continue
		}
		e.status = e.runPipeline(ao.pipe)
	}
	return e.status
}

func (e *env) lookupVar(name string) string {
	switch name {
	case "?":
		return strconv.Itoa(e.status)
	case "$":
		return strconv.Itoa(e.pid)
	case "#":
		return "0"
	}
	return e.vars[name]
}

func (e *env) runPipeline(p pipeline) int {
	in := e.stdin
	status := 0
	for i, c := range p {
		if i < len(p)-1 {
			var buf strings.Builder
			e.runSimple(c, in, &buf, e.stderr)
			in = strings.NewReader(buf.String())
			continue
		}
		status = e.runSimple(c, in, e.stdout, e.stderr)
	}
	return status
}

// runSimple applies redirections and runs one command.
func (e *env) runSimple(c simple, stdin io.Reader, stdout, stderr io.Writer) int {
	args := make([]string, 0, len(c.args))
	for _, w := range c.args {
		args = append(args, w.expand(e.lookupVar))
	}
	// Leading NAME=value words assign variables.
	for len(args) > 0 {
		name, val, ok := strings.Cut(args[0], "=")
		if !ok || name == "" || strings.IndexFunc(name, func(r rune) bool { return !isNameChar(byte(r)) || r > 127 }) >= 0 {
			break
		}
		e.vars[name] = val
		args = args[1:]
	}
	fds := map[int]io.Writer{1: stdout, 2: stderr}
	var pending []func() error
	for _, r := range c.redirs {
		target := r.target.expand(e.lookupVar)
		switch r.op {
		case "<":
			data, err := e.readPath(target)
			if err != nil {
				e.errf("/system/bin/sh: can't open '%s': %v\n", target, err)
				return 1
			}
			stdin = strings.NewReader(string(data))
		case ">&":
			n, err := strconv.Atoi(target)
			if err != nil || fds[n] == nil {
				e.errf("/system/bin/sh: %s: bad file descriptor\n", target)
				return 1
			}
			fds[r.fd] = fds[n]
		case ">", ">>":
			if target == "/dev/null" {
				fds[r.fd] = io.Discard
				continue
			}
			path := Clean(e.cwd, target)
			w := &fileWriter{e: e, path: path, appendTo: r.op == ">>"}
			if err := w.check(); err != nil {
				e.errf("/system/bin/sh: can't create %s: %v\n", target, err)
				return 1
			}
			fds[r.fd] = w
			pending = append(pending, w.flush)
		}
	}
	if len(args) == 0 && c.group == nil {
		for _, f := range pending {
			if err := f(); err != nil {
				e.errf("/system/bin/sh: %v\n", err)
				return 1
			}
		}
		return 0
	}
	var status int
	if c.group != nil {
		status = e.runGroup(c, stdin, fds[1], fds[2])
	} else {
		status = e.exec(args, stdin, fds[1], fds[2])
	}
	for _, f := range pending {
		if err := f(); err != nil {
			// Writing a kernel file fails at write(2): report it as the shell does.
			fmt.Fprintf(fds[2], "/system/bin/sh: %v\n", err)
			status = 1
		}
	}
	return status
}

// runGroup runs a { list; } group in this shell (variables and exit carry
// over) or a ( list ) subshell in a copy, with the group's redirections.
func (e *env) runGroup(c simple, stdin io.Reader, stdout, stderr io.Writer) int {
	if c.subshell {
		sub := e.sub(e.uid, stdout, stderr)
		sub.stdin, sub.status = stdin, e.status
		return sub.runList(c.group)
	}
	saved := [3]any{e.stdin, e.stdout, e.stderr}
	e.stdin, e.stdout, e.stderr = stdin, stdout, stderr
	status := e.runList(c.group)
	e.stdin, e.stdout, e.stderr = saved[0].(io.Reader), saved[1].(io.Writer), saved[2].(io.Writer)
	return status
}

// fileWriter collects a redirection's output and writes it on flush, so a
// sysfs write happens once with the whole value, as echo does.
type fileWriter struct {
	e        *env
	path     string
	appendTo bool
	buf      []byte
}

func (w *fileWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *fileWriter) check() error {
	if isKernelPath(w.path) {
		if _, err := w.e.sh.FS.Stat(w.path); err != nil {
			return err
		}
		if w.e.uid != 0 {
			return ErrPermission
		}
		return nil
	}
	if info, err := w.e.sh.FS.Stat(w.path); err == nil && info.Mode&ModeDir != 0 {
		return ErrIsDir
	}
	return nil
}

func (w *fileWriter) flush() error {
	if isKernelPath(w.path) {
		if err := w.e.sh.Phone.WriteFile(w.path, w.buf); err != nil {
			return fmt.Errorf("write error: %v", errText(err))
		}
		return nil
	}
	if err := w.e.sh.FS.WriteFile(w.path, w.buf, 0o644, w.e.uid, w.appendTo); err != nil {
		return fmt.Errorf("can't create %s: %v", w.path, err)
	}
	return nil
}

func isKernelPath(p string) bool {
	return strings.HasPrefix(p, "/sys/") || strings.HasPrefix(p, "/proc/") || p == "/sys" || p == "/proc"
}

// readPath reads a file from the kernel model or the file system.
func (e *env) readPath(p string) ([]byte, error) {
	return e.sh.FS.ReadFile(Clean(e.cwd, p))
}
