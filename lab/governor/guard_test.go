package governor

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perflab/perflab/internal/proctest"
	"github.com/perflab/perflab/lab"
)

// lockProfile locks both clusters of sysTree and turns thermal core
// control off, as `check --profile recommended` does on a phone.
func lockProfile() lab.GovernorProfile {
	off := false
	return lab.GovernorProfile{Name: "lock", ThermalCore: &off, Clusters: []lab.ClusterSetting{
		{CPUs: []int{0, 1}, Governor: "performance", MinKHz: 600000, MaxKHz: 600000},
		{CPUs: []int{2, 3}, Governor: "performance", MinKHz: 1600000, MaxKHz: 1600000},
	}}
}

func profileJSON(t *testing.T, p lab.GovernorProfile) string {
	t.Helper()
	p.Name = ""
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGuardHelperProcess is the perflab that gets killed: run by
// TestSIGKILLedLockIsRepairedByTheNextRun as a subprocess, it locks the
// tree's frequencies through a guarded Local, says "locked" and waits.
func TestGuardHelperProcess(t *testing.T) {
	root, dir := os.Getenv("PERFLAB_GUARD_HELPER_ROOT"), os.Getenv("PERFLAB_GUARD_HELPER_DIR")
	if root == "" {
		t.Skip("run as a subprocess by TestSIGKILLedLockIsRepairedByTheNextRun")
	}
	g := &Local{Files: OS{Root: root}, Guard: &Guard{Device: LocalDevice, Files: OS{Root: root}, Dir: dir}}
	if _, err := g.ApplyProfile(context.Background(), lockProfile()); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(10 * time.Minute)
	os.Exit(1)
}

func TestSIGKILLedLockIsRepairedByTheNextRun(t *testing.T) {
	ctx := context.Background()
	root, dir := sysTree(t), t.TempDir()
	newLocal := func() *Local {
		return &Local{Files: OS{Root: root}, Guard: &Guard{Device: LocalDevice, Files: OS{Root: root}, Dir: dir}}
	}
	stock, err := newLocal().ReadProfile(ctx)
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestGuardHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PERFLAB_GUARD_HELPER_ROOT="+root, "PERFLAB_GUARD_HELPER_DIR="+dir)
	helper := proctest.StartUntil(t, cmd, "locked", 60*time.Second)

	// The host copy is private.
	hf := filepath.Join(dir, "governor", "local.json")
	if st, err := os.Stat(hf); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("host record %s: %v %v, want mode 0600", hf, st, err)
	}
	if st, err := os.Stat(filepath.Dir(hf)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("record dir: %v %v, want mode 0700", st, err)
	}

	// While the helper runs, another perflab leaves its settings alone.
	notes := newLocal().RepairLeftover(ctx)
	if len(notes) != 1 || !strings.Contains(notes[0], fmt.Sprintf("changed by perflab pid %d", helper.Pid())) {
		t.Fatalf("with the locking perflab alive: notes %q", notes)
	}
	locked, _ := newLocal().ReadProfile(ctx)
	if profileJSON(t, locked) != profileJSON(t, lockProfile()) {
		t.Fatalf("helper's lock not in force: %s", profileJSON(t, locked))
	}

	helper.Kill9(t)
	if got, _ := newLocal().ReadProfile(ctx); profileJSON(t, got) != profileJSON(t, lockProfile()) {
		t.Fatal("the lock did not survive the SIGKILL: the test shows nothing")
	}

	// The next perflab restores the stock settings first, and says so.
	notes = newLocal().RepairLeftover(ctx)
	want := fmt.Sprintf("restored governor settings left by an earlier perflab run (pid %d, ", helper.Pid())
	if len(notes) != 1 || !strings.HasPrefix(notes[0], want) {
		t.Fatalf("notes %q, want one starting %q", notes, want)
	}
	got, err := newLocal().ReadProfile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if profileJSON(t, got) != profileJSON(t, stock) {
		t.Errorf("after repair:\n%s\nwant stock\n%s", profileJSON(t, got), profileJSON(t, stock))
	}
	if _, err := os.Stat(hf); !os.IsNotExist(err) {
		t.Errorf("host record left after the repair: %v", err)
	}
	if notes := newLocal().RepairLeftover(ctx); len(notes) != 0 {
		t.Errorf("second repair: %q", notes)
	}
}

// memFiles is a device file system in memory (the phone's marker file).
type memFiles struct {
	mu sync.Mutex
	m  map[string]string
}

func (f *memFiles) ReadFile(ctx context.Context, p string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[p]
	if !ok {
		return "", &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return v, nil
}

func (f *memFiles) WriteFile(ctx context.Context, p, v string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[p] = v
	return nil
}

func TestGuardRecords(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	ppid := os.Getppid()
	stockOf := func(t *testing.T, root string) lab.GovernorProfile {
		p, err := (&Local{Files: OS{Root: root}}).ReadProfile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	record := func(r Record, orig lab.GovernorProfile) string {
		r.Device, r.Original, r.Time = "adb:X", orig, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		b, _ := json.Marshal(r)
		return string(b)
	}
	gone := Record{Host: host, PID: ppid, PIDStart: 1} // the PID now belongs to another process
	elsewhere := Record{Host: host + "-other", PID: 1}
	running := Record{Host: host, PID: ppid, PIDStart: procStart(ppid)}

	cases := []struct {
		name      string
		marker    func(stock lab.GovernorProfile) string // "" = none
		hostCopy  func(stock lab.GovernorProfile) string
		wantNote  string // prefix of the one note, "" = none
		wantStock bool   // the device ends with its stock settings
		wantHost  bool   // the host copy remains
	}{
		{"leftover of a reused PID", func(s lab.GovernorProfile) string { return record(gone, s) }, nil,
			fmt.Sprintf("restored governor settings left by an earlier perflab run (pid %d, 2026-11-23 10:00:00 UTC)", ppid), true, false},
		{"leftover of another host", func(s lab.GovernorProfile) string { return record(elsewhere, s) }, nil,
			"restored governor settings left by an earlier perflab run (pid 1 on " + host + "-other, ", true, false},
		{"damaged marker, host copy", func(s lab.GovernorProfile) string { return `{"pid":` },
			func(s lab.GovernorProfile) string { return record(gone, s) }, "restored governor settings", true, false},
		{"damaged marker, no copy", func(s lab.GovernorProfile) string { return `garbage` }, nil,
			"governor: an earlier perflab run may have left settings changed, and restoring them failed: the governor marker on adb:X is damaged", false, false},
		{"stale host copy", nil, func(s lab.GovernorProfile) string { return record(gone, s) }, "", false, false},
		{"running perflab", func(s lab.GovernorProfile) string { return record(running, s) }, nil,
			fmt.Sprintf("governor settings changed by perflab pid %d (running since 2026-11-23 10:00:00 UTC)", ppid), false, false},
		{"nothing", nil, nil, "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, dir := sysTree(t), t.TempDir()
			stock := stockOf(t, root)
			dev := &memFiles{m: map[string]string{}}
			g := Guard{Device: "adb:X", Marker: FileMarker{Files: dev, Path: MarkerPath}, Files: OS{Root: root}, Dir: dir}
			if _, err := Apply(ctx, g.Files, nil, mustDiscover(t, root), lockProfile()); err != nil {
				t.Fatal(err)
			}
			if c.marker != nil {
				dev.m[MarkerPath] = c.marker(stock)
			}
			hf := filepath.Join(dir, "governor", "adb_X.json")
			if c.hostCopy != nil {
				os.MkdirAll(filepath.Dir(hf), 0o700)
				if err := os.WriteFile(hf, []byte(c.hostCopy(stock)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			notes := RepairNotes(ctx, g)
			switch {
			case c.wantNote == "" && len(notes) != 0:
				t.Errorf("notes %q, want none", notes)
			case c.wantNote != "" && (len(notes) != 1 || !strings.HasPrefix(notes[0], c.wantNote)):
				t.Errorf("notes %q, want one starting %q", notes, c.wantNote)
			}
			got := stockOf(t, root)
			if isStock := profileJSON(t, got) == profileJSON(t, stock); isStock != c.wantStock {
				t.Errorf("device restored to stock = %t, want %t: %s", isStock, c.wantStock, profileJSON(t, got))
			}
			if c.wantStock {
				if v := dev.m[MarkerPath]; v != "" {
					t.Errorf("marker left after the repair: %q", v)
				}
			}
			if _, err := os.Stat(hf); (err == nil) != c.wantHost {
				t.Errorf("host copy exists = %t, want %t", err == nil, c.wantHost)
			}
		})
	}
}

func mustDiscover(t *testing.T, root string) Layout {
	t.Helper()
	l, err := Discover(context.Background(), OS{Root: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A perflab that finds a leftover takes the saved original for the
// original, never the state the earlier run wrote; its clean end restores
// stock and removes the record on both sides.
func TestGuardBeginTakesTheSavedOriginal(t *testing.T) {
	ctx := context.Background()
	root, dir := sysTree(t), t.TempDir()
	dev := &memFiles{m: map[string]string{}}
	g := Guard{Device: "adb:X", Marker: FileMarker{Files: dev, Path: MarkerPath}, Files: OS{Root: root}, Dir: dir}
	loc := &Local{Files: OS{Root: root}, Guard: &g}
	stock, _ := loc.ReadProfile(ctx)
	host, _ := os.Hostname()
	b, _ := json.Marshal(Record{Device: "adb:X", Host: host, PID: os.Getppid(), PIDStart: 1, Time: time.Now(), Original: stock})
	dev.m[MarkerPath] = string(b)
	if _, err := Apply(ctx, OS{Root: root}, nil, mustDiscover(t, root), lockProfile()); err != nil {
		t.Fatal(err)
	}

	other := lab.GovernorProfile{Clusters: []lab.ClusterSetting{{CPUs: []int{2, 3}, Governor: "powersave", MinKHz: 800000, MaxKHz: 800000}}}
	if _, err := loc.ApplyProfile(ctx, other); err != nil {
		t.Fatal(err)
	}
	if profileJSON(t, *loc.saved) != profileJSON(t, stock) {
		t.Fatalf("original taken as %s, want the saved stock %s", profileJSON(t, *loc.saved), profileJSON(t, stock))
	}
	rec, err := g.Load(ctx)
	if err != nil || rec == nil || !rec.ownedBySelf() {
		t.Fatalf("record after Begin: %+v %v, want this process's", rec, err)
	}
	// A second Local of this process (check's candidates in a tune) shares it.
	if _, err := (&Local{Files: OS{Root: root}, Guard: &g}).ApplyProfile(ctx, lockProfile()); err != nil {
		t.Fatal(err)
	}
	if _, err := loc.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := loc.ReadProfile(ctx); profileJSON(t, got) != profileJSON(t, stock) {
		t.Errorf("restored %s, want stock", profileJSON(t, got))
	}
	if dev.m[MarkerPath] != "" {
		t.Errorf("marker left: %q", dev.m[MarkerPath])
	}
	if _, err := os.Stat(filepath.Join(dir, "governor", "adb_X.json")); !os.IsNotExist(err) {
		t.Errorf("host copy left: %v", err)
	}
}

// A kept profile ends the record: no later perflab undoes it.
func TestGuardKeepEndsTheRecord(t *testing.T) {
	ctx := context.Background()
	root, dir := sysTree(t), t.TempDir()
	g := Guard{Device: LocalDevice, Files: OS{Root: root}, Dir: dir}
	loc := &Local{Files: OS{Root: root}, Guard: &g}
	if _, err := loc.ApplyProfile(ctx, lockProfile()); err != nil {
		t.Fatal(err)
	}
	if rec, _ := g.Load(ctx); rec == nil {
		t.Fatal("no record after ApplyProfile")
	}
	if err := loc.KeepApplied(ctx); err != nil {
		t.Fatal(err)
	}
	if rec, _ := g.Load(ctx); rec != nil {
		t.Errorf("record after KeepApplied: %+v", rec)
	}
}

func TestStateDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if d, _ := StateDir(); d != "/x/state/perflab" {
		t.Errorf("StateDir with XDG_STATE_HOME = %q", d)
	}
	t.Setenv("XDG_STATE_HOME", "relative") // ignored, as the spec says
	t.Setenv("HOME", "/home/u")
	if d, _ := StateDir(); d != "/home/u/.local/state/perflab" {
		t.Errorf("StateDir = %q", d)
	}
}

func TestOwnerTag(t *testing.T) {
	tag := OwnerTag()
	r, ok := ParseOwnerTag(tag)
	if !ok || r.PID != os.Getpid() || r.Gone() {
		t.Fatalf("ParseOwnerTag(%q) = %+v %t; this process must not be gone", tag, r, ok)
	}
	host, _ := os.Hostname()
	for _, c := range []struct {
		tag      string
		ok, gone bool
	}{
		{fmt.Sprintf("perflab.%d.%d.%s", os.Getppid(), procStart(os.Getppid()), host), true, false}, // running
		{fmt.Sprintf("perflab.%d.1.%s", os.Getppid(), host), true, true},                            // PID reused
		{"perflab.1.1.other.host.example", true, true},                                              // another host
		{"tmpfs", false, false},
		{"perflab.x.1.h", false, false},
		{"perflab.0.1.h", false, false},
	} {
		r, ok := ParseOwnerTag(c.tag)
		if ok != c.ok || ok && r.Gone() != c.gone {
			t.Errorf("ParseOwnerTag(%q) = %+v, %t; want ok %t gone %t", c.tag, r, ok, c.ok, c.gone)
		}
	}
}
