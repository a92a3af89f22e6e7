package watch

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

// Lock is one device's lock file, held while a watch uses the device.
// It is an advisory lock (flock) on a file in the data folder, so the
// kernel releases it when the holder dies: a crashed watch never leaves
// its device locked. The file names its holder (pid, command, since when)
// for the message a second watch gets.
type Lock struct {
	f    *os.File
	Path string
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// LockPath is the lock file of device in dir.
func LockPath(dir, device string) string {
	return filepath.Join(dir, unsafeName.ReplaceAllString(device, "_")+".lock")
}

// LockDevice takes device's lock in dir for holder (a description such as
// "perflab watch exp.json"), or fails at once naming the holder's pid.
func LockDevice(dir, device, holder string) (*Lock, error) {
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
			return nil, fmt.Errorf("device %s is in use: %s (lock %s); perflab runs one experiment on a device at a time",
				device, strings.TrimSpace(string(who)), path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d, %s, since %s\n", os.Getpid(), holder, time.Now().Format(time.RFC3339))
	return &Lock{f: f, Path: path}, nil
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
