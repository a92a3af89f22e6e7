package local

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"slices"
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
//   - Trial commands and hooks start with Pdeathsig SIGKILL, so they die
//     when perflab does, even by SIGKILL. The signal fires when the thread
//     that forked the child exits, so the goroutine stays locked to its
//     thread from the fork until the child is waited for.
//   - A watchdog process (a small sh script, in its own session) waits on a
//     pipe from perflab; when perflab dies without saying goodbye it kills
//     every process on the host whose environment carries the run's id.
//
// What remains: a process that drops RunIDEnv from its environment (exec
// with a cleared environment) and leaves the trial's process group is not
// found; it can no longer reach later trials, though (each trial has its
// own output files and metrics token).

// RunIDEnv names the environment variable that marks every process of a
// local run.
const RunIDEnv = "PERFLAB_RUN_ID"

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
	id           string
	mark         []byte   // RunIDEnv=id, as an environ entry
	childrenFile *os.File // of perflab's main thread
	childrenFD   int      // childrenFile's, read directly
	buf          []byte
	session      int // perflab's

	watchdog *exec.Cmd
	wdPipe   *os.File
	note     string // why the watchdog or subreaper is missing, if so
}

// newReaper makes perflab a subreaper and starts the watchdog of a run.
func newReaper() *reaper {
	r := &reaper{id: randomHex(12), buf: make([]byte, 0, 512)}
	r.session, _ = unix.Getsid(0)
	r.mark = []byte(RunIDEnv + "=" + r.id)
	var notes []string
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		notes = append(notes, "not a subreaper ("+err.Error()+"): leftovers outside a trial's process group are not found")
	}
	if err := r.startWatchdog(); err != nil {
		notes = append(notes, "no watchdog ("+err.Error()+"): if perflab is killed, only the trial's first process dies with it")
	}
	r.note = strings.Join(notes, "; ")
	return r
}

// env returns the marker for a trial's environment.
func (r *reaper) env() string { return string(r.mark) }

// watchdogScript waits until perflab says goodbye (a line "q") or dies
// (end of file); in the second case it kills, until none is left, every
// process whose environment holds the entry $1. It is sh, not perflab
// re-executed, because it starts in a millisecond.
const watchdogScript = `trap '' HUP INT
read -r line
[ "$line" = q ] && exit 0
i=0
while [ $i -lt 100 ]; do
	found=
	for e in /proc/[0-9]*/environ; do
		tr '\0' '\n' < "$e" 2>/dev/null | grep -qxF -e "$1" || continue
		p=${e#/proc/}
		kill -9 "${p%/environ}" 2>/dev/null && found=1
	done
	[ -z "$found" ] && exit 0
	i=$((i+1))
	sleep 0.02
done`

// watchdogName is the watchdog's $0, how otherWatchdog knows one.
const watchdogName = "perflab-watchdog"

// startWatchdog starts the run's watchdog.
func (r *reaper) startWatchdog() error {
	rd, wr, err := os.Pipe()
	if err != nil {
		return err
	}
	defer rd.Close()
	cmd := exec.Command("sh", "-c", watchdogScript, watchdogName, string(r.mark))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stdin = rd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // away from the terminal's SIGHUP
	if err := cmd.Start(); err != nil {
		wr.Close()
		return err
	}
	r.watchdog, r.wdPipe = cmd, wr
	return nil
}

// close ends leftovers and tells the watchdog the run ended normally.
func (r *reaper) close() {
	r.endLeftovers(nil)
	if r.childrenFile != nil {
		r.childrenFile.Close()
	}
	if r.watchdog != nil {
		// "q" sits in the pipe for the watchdog to read: it exits without
		// perflab waiting for it (a shell's exit is a millisecond the run
		// need not spend). It is reaped in the background, or by init if
		// perflab exits first; one that does not exit is killed.
		r.wdPipe.Write([]byte("q\n"))
		r.wdPipe.Close()
		wd := r.watchdog
		go func() {
			done := make(chan struct{})
			go func() { wd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				wd.Process.Kill()
			}
		}()
	}
}

// endLeftovers kills the run's processes still alive after a trial: the
// children of perflab (orphans come to it, a subreaper) whose environment
// carries the run's id, and then theirs, which are re-parented in turn. It
// also reaps zombies re-parented to perflab whose process group or session
// is one of groups or of a killed leftover, or whose session is not
// perflab's. It reports whether perflab had
// no child at all (but the watchdog): then nothing of the trial outlived it.
func (r *reaper) endLeftovers(groups map[int]bool) (none bool) {
	kids := r.children()
	if len(kids) == 0 {
		return true // the common case, checked before any allocation
	}
	known := make(map[int]bool, len(groups))
	for k := range groups {
		known[k] = true
	}
	for round := 0; round < 1000; round++ {
		if round > 0 {
			kids = r.children()
		}
		found := false
		for _, pid := range kids {
			st, ok := readStat(pid)
			if !ok {
				continue
			}
			if st.state == 'Z' {
				// Nothing waits for a zombie of another session: perflab
				// starts no session but the watchdog's (not listed).
				if known[st.pgrp] || known[st.session] || st.session != r.session {
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
			found = true
		}
		if !found {
			break
		}
	}
	return false
}

// children lists the children of perflab's main thread, where the kernel
// re-parents orphans (to a subreaper's first live thread), except the
// watchdog. The file stays open: reading it again from offset 0 renews it,
// at a fraction of an open's cost.
func (r *reaper) children() []int {
	if r.childrenFile == nil {
		f, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/children", os.Getpid(), os.Getpid()))
		if err != nil {
			return nil
		}
		r.childrenFile, r.childrenFD = f, int(f.Fd())
	}
	// pread straight to the kernel, after every trial: a proc file does
	// not block, and os.File's layers cost more than the read.
	b := r.buf[:0]
	for {
		n, err := unix.Pread(r.childrenFD, b[len(b):cap(b)], int64(len(b)))
		if err != nil || n <= 0 {
			break
		}
		b = b[:len(b)+n]
		if len(b) < cap(b) {
			break
		}
		b = slices.Grow(b, cap(b))
	}
	r.buf = b[:0]
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && (r.watchdog == nil || pid != r.watchdog.Process.Pid) && !r.otherWatchdog(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// otherWatchdog reports whether pid is the watchdog of an earlier run in
// this process, which Close told goodbye but did not wait for (it exits
// and is reaped on its own): not a leftover of this run's trials. A
// watchdog is named so and does not carry the run's id in its environment.
func (r *reaper) otherWatchdog(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(b, []byte("\x00"+watchdogName+"\x00")) && !r.marked(pid)
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
