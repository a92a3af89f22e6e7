package governor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab"
)

// Crash safety. Before perflab first changes a device's governor settings
// (CPU governors and frequencies, GPU, thermal core control, input boost,
// mpdecision) it saves the original settings twice: in a marker on the
// device (a file, see [FileMarker]) and in a file under this host's state
// directory ([StateDir]/governor/DEVICE.json, mode 0600). A clean close
// restores the settings and removes both. A perflab that dies without
// closing (SIGKILL, a crash, power loss) leaves them behind; the next perflab
// command against the device finds them ([Guard.Repair]), restores the
// saved original and says so ([RepairNote]). While a record exists its
// original is the device's original: a perflab-written state is never taken
// for it ([Guard.Begin]).
//
// What is not covered: a record whose writer runs on another host is taken
// for a leftover (perflab cannot see that process); two perflab processes
// changing one device's settings at once share one original, and the last
// to close restores it.

// Record is the saved original of one device and who saved it.
type Record struct {
	Device   string              `json:"device"`
	Host     string              `json:"host"`
	PID      int                 `json:"pid"`
	PIDStart uint64              `json:"pid_start,omitempty"` // /proc/PID/stat starttime, tells PID reuse apart
	Time     time.Time           `json:"time"`
	Original lab.GovernorProfile `json:"original"`
}

// Marker keeps the device's half of a Record.
type Marker interface {
	// ReadMarker returns the marker's contents, "" when there is none.
	ReadMarker(ctx context.Context) (string, error)
	WriteMarker(ctx context.Context, s string) error
	RemoveMarker(ctx context.Context) error
}

// MarkerPath is where the marker lives on an Android phone: next to
// perflab's other files, outside sysfs, surviving a reboot.
const MarkerPath = "/data/local/tmp/perflab-governor-before.json"

// FileMarker is a Marker in a file of the device, written through Files
// (which cannot delete: removing writes the file empty, which reads as
// none).
type FileMarker struct {
	Files Files
	Path  string
}

// ReadMarker implements Marker.
func (m FileMarker) ReadMarker(ctx context.Context) (string, error) {
	s, err := m.Files.ReadFile(ctx, m.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(s), err
}

// WriteMarker implements Marker.
func (m FileMarker) WriteMarker(ctx context.Context, s string) error {
	return m.Files.WriteFile(ctx, m.Path, s)
}

// RemoveMarker implements Marker.
func (m FileMarker) RemoveMarker(ctx context.Context) error {
	return m.Files.WriteFile(ctx, m.Path, "")
}

// StateDir is perflab's state directory on this host:
// $XDG_STATE_HOME/perflab, else ~/.local/state/perflab.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "perflab"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory for perflab's crash records: %w", err)
	}
	return filepath.Join(h, ".local", "state", "perflab"), nil
}

// Guard keeps the crash record of one device.
type Guard struct {
	// Device names the device ("adb:SERIAL", "local"); it names the host
	// file.
	Device string
	// Marker is the device's half; nil when the device is this host (the
	// host file is then the only one).
	Marker Marker
	// Dir is the host's state directory; "" means StateDir().
	Dir string
	// Files and Services put the original back on Repair.
	Files    Files
	Services Services
}

func (g Guard) hostFile() (string, error) {
	dir := g.Dir
	if dir == "" {
		d, err := StateDir()
		if err != nil {
			return "", err
		}
		dir = d
	}
	return filepath.Join(dir, "governor", FileName(g.Device)), nil
}

// Load returns the device's record, nil when there is none. The device's
// marker decides when the device has one (the host file may be stale: an
// earlier repair from another host); the host file stands in when the
// marker is unreadable or the device is this host.
func (g Guard) Load(ctx context.Context) (*Record, error) {
	hf, err := g.hostFile()
	if err != nil {
		return nil, err
	}
	var host *Record
	if b, err := os.ReadFile(hf); err == nil {
		var r Record
		if json.Unmarshal(b, &r) == nil && r.PID > 0 {
			host = &r
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", hf, err)
	}
	if g.Marker == nil {
		return host, nil
	}
	s, err := g.Marker.ReadMarker(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the governor marker on %s: %w", g.Device, err)
	}
	if s == "" {
		if host != nil && !host.ownedBySelf() && !host.alive() {
			// The device was restored and cleaned elsewhere.
			os.Remove(hf)
		}
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.PID <= 0 {
		if host != nil {
			return host, nil
		}
		return nil, fmt.Errorf("the governor marker on %s is damaged (%q) and this host has no copy: check the settings by hand, then remove it", g.Device, abbrev(s))
	}
	return &r, nil
}

func abbrev(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// Begin is called before the first write of a profile. It returns the
// device's original settings: the saved ones when a record exists (left by
// a crash, or this process's own), else read() — which it saves on the host
// and on the device before returning. An error means the original could not
// be saved, and the device must not be changed.
func (g Guard) Begin(ctx context.Context, read func(context.Context) (lab.GovernorProfile, error)) (lab.GovernorProfile, error) {
	rec, err := g.Load(ctx)
	if err != nil {
		return lab.GovernorProfile{}, err
	}
	if rec != nil && rec.ownedBySelf() {
		return rec.Original, nil
	}
	var orig lab.GovernorProfile
	if rec != nil {
		orig = rec.Original // never take what an earlier run wrote for the original
	} else if orig, err = read(ctx); err != nil {
		return orig, fmt.Errorf("reading the settings to restore later: %w", err)
	}
	if err := g.save(ctx, orig); err != nil {
		return orig, err
	}
	return orig, nil
}

func (g Guard) save(ctx context.Context, orig lab.GovernorProfile) error {
	me := selfRecord()
	me.Device, me.Original = g.Device, orig
	b, err := json.Marshal(me)
	if err != nil {
		return err
	}
	hf, err := g.hostFile()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(hf), 0o700); err != nil {
		return fmt.Errorf("saving the original governor settings: %w", err)
	}
	tmp := hf + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("saving the original governor settings: %w", err)
	}
	if err := os.Rename(tmp, hf); err != nil {
		return fmt.Errorf("saving the original governor settings: %w", err)
	}
	if g.Marker != nil {
		if err := g.Marker.WriteMarker(ctx, string(b)); err != nil {
			return fmt.Errorf("saving the original governor settings on %s: %w", g.Device, err)
		}
	}
	return nil
}

// End removes the record after the original was restored (or the profile
// is kept on purpose). A record another live process wrote is left alone.
func (g Guard) End(ctx context.Context) error {
	rec, err := g.Load(ctx)
	if err != nil || rec == nil {
		return err
	}
	if !rec.ownedBySelf() && rec.alive() {
		return nil
	}
	return g.remove(ctx)
}

func (g Guard) remove(ctx context.Context) error {
	var errs []error
	if g.Marker != nil {
		if err := g.Marker.RemoveMarker(ctx); err != nil {
			errs = append(errs, fmt.Errorf("removing the governor marker on %s: %w", g.Device, err))
		}
	}
	if hf, err := g.hostFile(); err == nil {
		if err := os.Remove(hf); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Restore puts back the original this process saved and removes the
// record. It does nothing when there is no record of this process.
func (g Guard) Restore(ctx context.Context) ([]string, error) {
	rec, err := g.Load(ctx)
	if err != nil || rec == nil || !rec.ownedBySelf() {
		return nil, err
	}
	return g.put(ctx, rec)
}

func (g Guard) put(ctx context.Context, rec *Record) ([]string, error) {
	l, err := Discover(ctx, g.Files, g.Services)
	if err != nil {
		return nil, err
	}
	mis, err := Apply(ctx, g.Files, g.Services, l, restorable(l, rec.Original))
	if err != nil {
		return mis, fmt.Errorf("restoring the original governor settings: %w", err)
	}
	return mis, g.remove(ctx)
}

// restorable drops from p what the layout no longer has (a service that
// went away), so a restore puts back all it can.
func restorable(l Layout, p lab.GovernorProfile) lab.GovernorProfile {
	if !l.ThermalCore {
		p.ThermalCore = nil
	}
	if !l.InputBoost {
		p.InputBoost = nil
	}
	if !l.MPDecision {
		p.MPDecision = nil
	}
	if l.GPU == "" {
		p.GPU = nil
	}
	p.Keep = false
	return p
}

// Repair restores the settings a perflab run that is gone left on the
// device, and removes its record. It returns that record (nil when there
// was nothing to repair) with the read-back mismatches of the restore. A
// record of a perflab process still running on this host is left alone:
// rec is nil and held names it.
func (g Guard) Repair(ctx context.Context) (rec *Record, mismatches []string, held *Record, err error) {
	r, err := g.Load(ctx)
	if err != nil || r == nil || r.ownedBySelf() {
		return nil, nil, nil, err
	}
	if r.alive() {
		return nil, nil, r, nil
	}
	mis, err := g.put(ctx, r)
	if err != nil {
		return nil, mis, nil, err
	}
	return r, mis, nil, nil
}

// RepairNote is the message for a repaired record, e.g. "restored governor
// settings left by an earlier perflab run (pid 4242, 2026-11-23 10:44:00 UTC)".
func RepairNote(r *Record) string {
	who := fmt.Sprintf("pid %d", r.PID)
	if h, _ := os.Hostname(); r.Host != "" && r.Host != h {
		who += " on " + r.Host
	}
	return fmt.Sprintf("restored governor settings left by an earlier perflab run (%s, %s): %s",
		who, r.Time.UTC().Format("2006-01-02 15:04:05 UTC"), Describe(r.Original))
}

// HeldNote is the message for a record of a perflab process still running.
func HeldNote(r *Record) string {
	return fmt.Sprintf("governor settings changed by perflab pid %d (running since %s); it restores them when it ends",
		r.PID, r.Time.UTC().Format("2006-01-02 15:04:05 UTC"))
}

// RepairNotes runs g.Repair and turns the outcome into notes for the user: what
// was restored, what holds the device, or why the repair failed.
func RepairNotes(ctx context.Context, g Guard) []string {
	rec, mis, held, err := g.Repair(ctx)
	var notes []string
	switch {
	case err != nil:
		notes = append(notes, "governor: an earlier perflab run may have left settings changed, and restoring them failed: "+err.Error())
	case held != nil:
		notes = append(notes, HeldNote(held))
	case rec != nil:
		notes = append(notes, RepairNote(rec))
	}
	for _, m := range mis {
		notes = append(notes, "governor restore: read-back differs: "+m)
	}
	return notes
}

// OwnerTag names this perflab process where a Record does not fit, e.g. as
// the source of a tmpfs it mounts on a phone: "perflab.PID.START.HOST".
// ParseOwnerTag reads it back, so a later perflab can tell a leftover of a
// process that is gone from the mount of one still running.
func OwnerTag() string {
	me := selfRecord()
	return fmt.Sprintf("perflab.%d.%d.%s", me.PID, me.PIDStart, me.Host)
}

// ParseOwnerTag reads an OwnerTag; ok is false when s is not one.
func ParseOwnerTag(s string) (r *Record, ok bool) {
	f := strings.SplitN(s, ".", 4)
	if len(f) != 4 || f[0] != "perflab" {
		return nil, false
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return nil, false
	}
	return &Record{PID: pid, PIDStart: start, Host: f[3]}, true
}

// Gone reports whether the process that wrote r has ended: not this
// process, and not running on this host (a writer on another host counts
// as gone, as for Repair).
func (r *Record) Gone() bool { return !r.ownedBySelf() && !r.alive() }

func selfRecord() Record {
	h, _ := os.Hostname()
	pid := os.Getpid()
	return Record{Host: h, PID: pid, PIDStart: procStart(pid), Time: time.Now().UTC().Truncate(time.Second)}
}

// ownedBySelf reports whether this process wrote r.
func (r *Record) ownedBySelf() bool {
	me := selfRecord()
	return r.Host == me.Host && r.PID == me.PID && (r.PIDStart == 0 || r.PIDStart == me.PIDStart)
}

// alive reports whether r's writer still runs: on this host, its PID exists
// and started when the record says. A writer on another host is taken for
// gone.
func (r *Record) alive() bool {
	if h, _ := os.Hostname(); r.Host != h || r.PID <= 0 {
		return false
	}
	if err := syscall.Kill(r.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	state, start := procStat(r.PID)
	if state == "Z" || state == "X" {
		return false // killed, not yet reaped
	}
	if r.PIDStart != 0 && start != 0 && start != r.PIDStart {
		return false // the PID was reused
	}
	return true
}

// procStart reads a process's start time (clock ticks after boot) from
// /proc/PID/stat, 0 when unknown.
func procStart(pid int) uint64 {
	_, start := procStat(pid)
	return start
}

// procStat reads a process's state letter and start time from
// /proc/PID/stat ("", 0 when unknown).
func procStat(pid int) (state string, start uint64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0
	}
	// Fields after "(comm)": state is field 3, starttime field 22.
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", 0
	}
	start, _ = strconv.ParseUint(f[19], 10, 64)
	return f[0], start
}
