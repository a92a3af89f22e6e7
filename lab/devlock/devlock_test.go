package devlock

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestTake(t *testing.T) {
	dir := t.TempDir()
	a, err := Take(dir, "adb:R58M/1", "first")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Take(dir, "adb:R58M/1", "second")
	var busy *BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d, first", os.Getpid())) {
		t.Errorf("second lock: %v; want a refusal naming the first's pid", err)
	}
	if b, err := Take(dir, "sim:pixel", "other device"); err != nil {
		t.Errorf("another device: %v", err)
	} else {
		b.Release()
	}
	a.Release()
	c, err := Take(dir, "adb:R58M/1", "third")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	c.Release()
	if err := c.Release(); err != nil {
		t.Errorf("second release: %v", err)
	}
}

func TestHolder(t *testing.T) {
	// The test binary's path is cut to its name; its flags follow.
	h := Holder()
	if f := strings.Fields(h); len(f) < 2 || strings.Contains(f[0], "/") || !strings.HasPrefix(f[1], "-test.") {
		t.Errorf("Holder() = %q, want the program's name and its arguments", h)
	}
}

// TestShare: shared holders share, and keep Take out; Take's holder keeps
// them out, named.
func TestShare(t *testing.T) {
	dir := t.TempDir()
	a, err := Share(dir, "local")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Share(dir, "local")
	if err != nil {
		t.Fatalf("a second shared holder: %v", err)
	}
	var busy *BusyError
	if _, err := Take(dir, "local", "perflab watch w.json"); !errors.As(err, &busy) || !strings.Contains(err.Error(), "in use: other perflab experiments hold it") {
		t.Errorf("Take beside shared holders: %v", err)
	}
	a.Release()
	b.Release()
	w, err := Take(dir, "local", "perflab watch w.json")
	if err != nil {
		t.Fatalf("Take once they are gone: %v", err)
	}
	if _, err := Share(dir, "local"); !errors.As(err, &busy) || !strings.Contains(err.Error(), fmt.Sprintf("in use: pid %d, perflab watch w.json", os.Getpid())) {
		t.Errorf("Share beside Take's holder: %v", err)
	}
	w.Release()
	// A killed exclusive holder left its name in the file: beside shared
	// holders, a refused Take does not name it.
	if err := os.WriteFile(LockPath(dir, "local"), []byte("pid 1, perflab watch dead.json, since then\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Share(dir, "local")
	if err != nil {
		t.Fatalf("Share once Take's holder is gone: %v", err)
	}
	if _, err := Take(dir, "local", "perflab watch w.json"); err == nil || strings.Contains(err.Error(), "dead.json") {
		t.Errorf("Take beside shared holders, a dead holder's name in the file: %v", err)
	}
	c.Release()
}

// TestTakeOwn: a lock this process holds is waited for, up to the wait;
// another process's never is (TestTake's refusals are immediate).
func TestTakeOwn(t *testing.T) {
	dir := t.TempDir()
	first, err := Take(dir, "adb:X", "closing")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		first.Release()
	}()
	second, err := TakeOwn(dir, "adb:X", "reopening", time.Minute)
	if err != nil {
		t.Fatalf("after our own close: %v", err)
	}
	start := time.Now()
	var busy *BusyError
	if _, err := TakeOwn(dir, "adb:X", "third", 300*time.Millisecond); !errors.As(err, &busy) || time.Since(start) < 300*time.Millisecond {
		t.Errorf("a lock we keep: %v after %v, want a refusal after the wait", err, time.Since(start))
	}
	second.Release()
}
