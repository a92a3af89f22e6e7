package local

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/perflab/perflab/lab"
)

// A trial's command is started with syscall.ForkExec and waited for with
// wait4, not through os/exec: os/exec's Cmd, its environment copy and
// de-duplication, and os.Process's pidfd (open, blocking waitid, close)
// cost a millisecond-long trial a measurable share of its time
// (bench/run_overhead.sh). What os/exec would do for perflab is kept:
// the executable is looked up in PATH when its name has no slash
// (exec.LookPath, the same errors), the environment's last entry of a
// name wins, and failures read as os/exec's ("exit status 1", "signal:
// killed", "fork/exec PATH: …"). Prepare and cleanup hooks start the same
// way (runHook): one spawn path, one set of process attributes.

// exitState is how a started command ended.
type exitState struct {
	status syscall.WaitStatus
	usage  syscall.Rusage
}

// err is the command's failure as os/exec reports it (exec.ExitError's
// text), or nil when it exited with status 0.
func (s exitState) err() error {
	switch {
	case s.status.Exited() && s.status.ExitStatus() == 0:
		return nil
	case s.status.Exited():
		return exitErr{"exit status " + strconv.Itoa(s.status.ExitStatus())}
	case s.status.Signaled():
		msg := "signal: " + s.status.Signal().String()
		if s.status.CoreDump() {
			msg += " (core dumped)"
		}
		return exitErr{msg}
	}
	return exitErr{"exit status unknown (wait status " + strconv.Itoa(int(s.status)) + ")"}
}

// exitErr is a command that ran and failed.
type exitErr struct{ msg string }

func (e exitErr) Error() string { return e.msg }

// lookCommand resolves argv[0] as exec.Command does: a name without a
// slash is looked up in PATH (once per run: a trial of "python3 x.py"
// should not walk PATH each time; perflab's PATH does not change).
func (d *Device) lookCommand(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	d.mu.Lock()
	path, ok := d.paths[name]
	d.mu.Unlock()
	if ok {
		return path, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", err // looked up again next time: it may be installed meanwhile
	}
	d.mu.Lock()
	if d.paths == nil {
		d.paths = map[string]string{}
	}
	d.paths[name] = path
	d.mu.Unlock()
	return path, nil
}

// dedupEnv is the environment os/exec would pass for env: the last
// entry of each name is kept, in the order names first appear; entries
// without "=" are kept as they are and empty ones dropped; an entry
// holding NUL is an error (os/exec's checks, kept so that trials see what
// they saw before).
func dedupEnv(env []string) ([]string, error) {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, errors.New("environment variable contains NUL")
		}
		eq := strings.IndexByte(kv, '=')
		if eq == 0 { // "=C:=…" on Windows: the name is up to the next "="
			eq = strings.IndexByte(kv[1:], '=') + 1
		}
		if eq < 0 {
			if kv != "" {
				out = append(out, kv)
			}
			continue
		}
		if seen[kv[:eq]] {
			continue
		}
		seen[kv[:eq]] = true
		out = append(out, kv)
	}
	slices.Reverse(out)
	return out, nil
}

// runDirect starts path with argv and env (already de-duplicated) in dir,
// stdin, stdout and stderr from files, in a process group of its own with
// Pdeathsig SIGKILL, calls started with its pid once it runs, and waits
// for it. The goroutine stays on its OS thread meanwhile: Pdeathsig fires
// when the forking thread exits, and Go ends threads only when a goroutine
// locked to one returns. ok is false when it did not start (err says why).
func (r *reaper) runDirect(path string, argv, env []string, dir string, files [3]*os.File, started func(pid int)) (st exitState, ok bool, err error) {
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{files[0].Fd(), files[1].Fd(), files[2].Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid, err := syscall.ForkExec(path, argv, attr)
	runtime.KeepAlive(files)
	if err != nil {
		return st, false, &os.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	if started != nil {
		started(pid)
	}
	for {
		_, err = syscall.Wait4(pid, &st.status, 0, &st.usage)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return st, true, os.NewSyscallError("wait4", err)
	}
	return st, true, nil
}

// trialVars are the environment entries each trial sets itself.
var trialVars = []string{"PERFLAB_ARM", "PERFLAB_TRIAL", "PERFLAB_WARMUP", lab.MetricsTokenEnv}

// spawnEnv makes a build's environment ready for runDirect: de-duplicated
// as os/exec would, and without the entries each trial sets itself, so a
// trial's own entries appended to it keep every name once. Setup makes it
// once per build (and again when the proxy adds its variables); appending
// to it copies.
func spawnEnv(base []string) ([]string, error) {
	env, err := dedupEnv(base)
	if err != nil {
		return nil, err
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(trialVars, k)
	})
	return env[:len(env):len(env)], nil
}
