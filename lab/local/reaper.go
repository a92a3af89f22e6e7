package local

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How trials are kept from outliving their trial, and perflab:
//
//   - Every process of a run carries RunIDEnv=<random id> in its environment.
//   - perflab is a child subreaper (PR_SET_CHILD_SUBREAPER), so a trial's
//     orphans, whatever session or process group they moved to, are
//     re-parented to perflab instead of init. After each trial (its
//     cleanup included) endLeftovers kills every child carrying the run's
//     id, level by level, and reaps them.
//   - Trials are started from one dedicated OS thread with Pdeathsig
//     SIGKILL, so the trial's process dies when perflab does, even by
//     SIGKILL (the signal follows the creating thread, hence the thread).
//   - A watchdog process (perflab re-executed, in its own session) waits on
//     a pipe from perflab; when perflab dies without saying goodbye it kills
//     every process on the host whose environment carries the run's id.
//
// What remains: a process that drops RunIDEnv from its environment (exec
// with a cleared environment) and leaves the trial's process group is not
// found; it can no longer reach later trials, though (each trial has its
// own output files and metrics token).

// RunIDEnv names the environment variable that marks every process of a
// local run.
const RunIDEnv = "PERFLAB_RUN_ID"

// watchdogEnv, set in the environment of perflab re-executed, makes it the
// watchdog of the run whose id it holds (see init).
const watchdogEnv = "PERFLAB_LOCAL_WATCHDOG_FOR"

func init() {
	if id := os.Getenv(watchdogEnv); id != "" && len(os.Args) == 2 && os.Args[1] == "perflab-local-watchdog" {
		os.Exit(watchdog(id))
	}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// reaper keeps a device's trial processes from outliving their trial.
type reaper struct {
	id    string
	mark  []byte // RunIDEnv=id, as an environ entry
	spawn chan func()
	quit  chan struct{}
	tid   int // the spawner thread

	watchdog *exec.Cmd
	wdPipe   *os.File
	note     string // why the watchdog or subreaper is missing, if so
}

// newReaper starts the spawner thread and the watchdog of a run.
func newReaper() *reaper {
	r := &reaper{id: randomHex(12), spawn: make(chan func()), quit: make(chan struct{})}
	r.mark = []byte(RunIDEnv + "=" + r.id)
	var notes []string
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		notes = append(notes, "not a subreaper ("+err.Error()+"): leftovers outside a trial's process group are not found")
	}
	started := make(chan int)
	go r.spawner(started)
	r.tid = <-started
	if err := r.startWatchdog(); err != nil {
		notes = append(notes, "no watchdog ("+err.Error()+"): if perflab is killed, only the trial's first process dies with it")
	}
	r.note = strings.Join(notes, "; ")
	return r
}

// env returns the marker for a trial's environment.
func (r *reaper) env() string { return string(r.mark) }

// spawner runs start functions on one locked OS thread for the run's
// lifetime: Pdeathsig fires when the thread that forked the child exits,
// and Go may end other threads.
func (r *reaper) spawner(started chan<- int) {
	runtime.LockOSThread()
	// Returning while locked ends the thread, which is what Close wants.
	started <- unix.Gettid()
	for {
		select {
		case f := <-r.spawn:
			f()
		case <-r.quit:
			return
		}
	}
}

// start starts cmd from the spawner thread, with Pdeathsig SIGKILL and in
// a process group of its own.
func (r *reaper) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	errc := make(chan error, 1)
	select {
	case r.spawn <- func() { errc <- cmd.Start() }:
		return <-errc
	case <-r.quit:
		return errors.New("device closed")
	}
}

// startWatchdog re-executes this program as the run's watchdog.
func (r *reaper) startWatchdog() error {
	rd, wr, err := os.Pipe()
	if err != nil {
		return err
	}
	defer rd.Close()
	cmd := exec.Command("/proc/self/exe", "perflab-local-watchdog")
	cmd.Env = []string{watchdogEnv + "=" + r.id, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = rd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // away from the terminal's SIGHUP
	if err := cmd.Start(); err != nil {
		wr.Close()
		return err
	}
	r.watchdog, r.wdPipe = cmd, wr
	return nil
}

// close ends leftovers, tells the watchdog the run ended normally and stops
// the spawner thread.
func (r *reaper) close() {
	r.endLeftovers(nil)
	if r.watchdog != nil {
		r.wdPipe.Write([]byte{'q'})
		r.wdPipe.Close()
		done := make(chan struct{})
		go func() { r.watchdog.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			r.watchdog.Process.Kill()
		}
	}
	close(r.quit)
}

// endLeftovers kills the run's processes still alive after a trial: the
// children of perflab (orphans come to it, a subreaper) whose environment
// carries the run's id, and then theirs, which are re-parented in turn. It
// also reaps zombies re-parented to perflab whose process group or session
// is one of groups or of a killed leftover. It returns how many it killed.
func (r *reaper) endLeftovers(groups map[int]bool) int {
	self := os.Getpid()
	killed := 0
	known := map[int]bool{}
	for k := range groups {
		known[k] = true
	}
	for round := 0; round < 1000; round++ {
		kids := r.children(self)
		found := false
		for _, pid := range kids {
			st, ok := readStat(pid)
			if !ok {
				continue
			}
			if st.state == 'Z' {
				if known[st.pgrp] || known[st.session] {
					unix.Wait4(pid, nil, unix.WNOHANG, nil)
				}
				continue
			}
			if !r.marked(pid) {
				continue
			}
			known[st.pgrp], known[st.session] = true, true
			unix.Kill(pid, unix.SIGKILL)
			unix.Wait4(pid, nil, 0, nil)
			killed++
			found = true
		}
		if !found {
			break
		}
	}
	return killed
}

// children lists the children of perflab's main thread (where the kernel
// re-parents orphans) and of the spawner thread.
func (r *reaper) children(self int) []int {
	var pids []int
	for _, tid := range []int{self, r.tid} {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// marked reports whether pid's environment carries the run's id.
func (r *reaper) marked(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && hasEnvEntry(b, r.mark)
}

// hasEnvEntry reports whether the NUL-separated environ holds entry.
func hasEnvEntry(environ, entry []byte) bool {
	for len(environ) > 0 {
		i := bytes.IndexByte(environ, 0)
		e := environ
		if i >= 0 {
			e, environ = environ[:i], environ[i+1:]
		} else {
			environ = nil
		}
		if bytes.Equal(e, entry) {
			return true
		}
	}
	return false
}

type procStat struct {
	state         byte
	pgrp, session int
}

// readStat reads a process's state, process group and session.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// "pid (comm) state ppid pgrp session ..."; comm may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return procStat{}, false
	}
	pgrp, err1 := strconv.Atoi(f[2])
	sess, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || len(f[0]) != 1 {
		return procStat{}, false
	}
	return procStat{state: f[0][0], pgrp: pgrp, session: sess}, true
}

// watchdog is the main function of the watchdog process: it waits until
// perflab says goodbye ('q') or dies (end of file), and in the second case
// kills every process whose environment carries the run's id.
func watchdog(id string) int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)
	b := make([]byte, 1)
	n, _ := os.Stdin.Read(b)
	if n == 1 && b[0] == 'q' {
		return 0
	}
	mark := []byte(RunIDEnv + "=" + id)
	self := os.Getpid()
	for round := 0; round < 100; round++ {
		found := 0
		ents, err := os.ReadDir("/proc")
		if err != nil {
			fmt.Fprintln(os.Stderr, "perflab watchdog:", err)
			return 1
		}
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !hasEnvEntry(env, mark) {
				continue
			}
			if st, ok := readStat(pid); ok && st.state == 'Z' {
				continue
			}
			unix.Kill(pid, unix.SIGKILL)
			found++
		}
		if found == 0 {
			return 0
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}
