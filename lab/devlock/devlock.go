// Package devlock keeps perflab to one experiment per device at a time:
// an advisory lock (flock) on a file per device, which the kernel drops
// when its holder exits or dies, so a crashed perflab never leaves a device
// locked. The file names its holder (pid, command, since when) for the
// message a second perflab gets.
package devlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Lock is one device's lock file, held while a perflab uses the device.
type Lock struct {
	f      *os.File
	Path   string
	shared bool // Share's: the file names no holder
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// LockPath is the lock file of device in dir.
func LockPath(dir, device string) string {
	return filepath.Join(dir, unsafeName.ReplaceAllString(device, "_")+".lock")
}

// Take takes device's lock in dir for holder (a description such as
// "perflab watch exp.json"), or fails at once naming the holder's pid. A
// second Take of one device in one process fails too (flock locks belong
// to the open file, not the process).
func Take(dir, device, holder string) (*Lock, error) {
	return TakeOwn(dir, device, holder, 0)
}

// TakeOwn is Take, except that a lock this process itself holds is waited
// for, up to wait: a device whose close is still under way when it is
// opened again (the workbench leaves a check on a phone, whose settings
// take up to a minute to restore, and starts a run on it).
func TakeOwn(dir, device, holder string, wait time.Duration) (*Lock, error) {
	f, err := lockFile(dir, device, unix.LOCK_EX, wait)
	if err != nil {
		return nil, err
	}
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d, %s, since %s\n", os.Getpid(), holder, time.Now().Format(time.RFC3339))
	return &Lock{f: f, Path: f.Name()}, nil
}

// lockFile opens device's lock file in dir and flocks it (how: LOCK_EX
// or LOCK_SH), at once or not at all: a BusyError naming the file's
// holder when another holds it. A lock this process itself holds
// exclusively is waited for up to selfWait (TakeOwn).
func lockFile(dir, device string, how int, selfWait time.Duration) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := LockPath(dir, device)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	self := fmt.Sprintf("pid %d,", os.Getpid())
	deadline := time.Now().Add(selfWait)
	if selfWait <= 0 {
		self = "\x00" // no holder text starts so: never wait
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		who, exclusive := "", true
		if how == unix.LOCK_SH || unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil {
			// An exclusive holder, who wrote the file (or is about
			// to, or has just emptied it as it lets go).
			b, _ := os.ReadFile(path)
			who = strings.TrimSpace(string(b))
		} else {
			// Shared holders: the file's text, if any, is an earlier
			// exclusive holder's. Ours got the lock shared; let it go.
			exclusive = false
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
		}
		ours := strings.HasPrefix(who, self) || exclusive && who == "" && selfWait > 0
		if !ours || time.Now().After(deadline) {
			f.Close()
			return nil, &BusyError{Device: device, Holder: who, Path: path}
		}
		// This perflab holds it (or a holder is between its flock and
		// its name): a close still under way (a phone's takes up to a
		// minute, restoring its settings) lets it go.
		time.Sleep(100 * time.Millisecond)
	}
}

// Share takes device's lock in dir shared: any number of perflab
// processes hold it at once, and none while Take's holder has it (nor Take
// while they do). A host's local device uses it: experiments started by
// hand may share the host as they always have, a watch may not share it
// with them.
func Share(dir, device string) (*Lock, error) {
	f, err := lockFile(dir, device, unix.LOCK_SH, 0)
	if err != nil {
		return nil, err
	}
	return &Lock{f: f, Path: f.Name(), shared: true}, nil
}

// BusyError says that another perflab (or this one) holds the device.
// Holder is "" when it is held shared (Share), by processes that do not
// name themselves.
type BusyError struct {
	Device, Holder, Path string
}

func (e *BusyError) Error() string {
	who := e.Holder
	if who == "" {
		who = "other perflab experiments hold it"
	}
	return fmt.Sprintf("device %s is in use: %s (lock %s); perflab runs one experiment on a device at a time",
		e.Device, who, e.Path)
}

// Holder describes this process for a lock file: its command line, with
// the program's own path cut to its name (perflab run exp.json).
func Holder() string {
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	s := strings.Join(args, " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Release lets the device go. The file stays (removing it would race with
// a process that opened it and waits to lock it).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	if !l.shared {
		l.f.Truncate(0) // a shared holder never wrote it
	}
	err := l.f.Close() // closing drops the flock
	l.f = nil
	return err
}
