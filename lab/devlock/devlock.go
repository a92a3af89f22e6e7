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
	f    *os.File
	Path string
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := LockPath(dir, device)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who, _ := os.ReadFile(path)
			return nil, &BusyError{Device: device, Holder: strings.TrimSpace(string(who)), Path: path}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d, %s, since %s\n", os.Getpid(), holder, time.Now().Format(time.RFC3339))
	return &Lock{f: f, Path: path}, nil
}

// BusyError says that another perflab (or this one) holds the device.
type BusyError struct {
	Device, Holder, Path string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("device %s is in use: %s (lock %s); perflab runs one experiment on a device at a time",
		e.Device, e.Holder, e.Path)
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
	l.f.Truncate(0)
	err := l.f.Close() // closing drops the flock
	l.f = nil
	return err
}
