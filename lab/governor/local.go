package governor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/perflab/perflab/lab"
)

// OS is Files over the real file system. Root prefixes every path ("" or
// "/" for the live /sys); tests point it at a directory tree shaped like
// sysfs.
type OS struct{ Root string }

func (o OS) real(p string) string {
	if o.Root == "" || o.Root == "/" {
		return p
	}
	return filepath.Join(o.Root, filepath.FromSlash(p))
}

// ReadFile reads a file.
func (o OS) ReadFile(ctx context.Context, p string) (string, error) {
	b, err := os.ReadFile(o.real(p))
	return string(b), err
}

// WriteFile writes value to an existing file, as `echo value > path` would:
// sysfs files are never created.
func (o OS) WriteFile(ctx context.Context, p, value string) error {
	f, err := os.OpenFile(o.real(p), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return writeErr(p, err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return writeErr(p, err)
	}
	return nil
}

func writeErr(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("cpufreq not writable: %s: %w (needs root and a writable /sys)", p, err)
	case errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("%s: the kernel rejected the value: %w", p, err)
	}
	return err
}

// Local is the governor of this Linux host, through /sys. It implements
// lab.Governor and restores the settings it found on Restore.
type Local struct {
	Files Files
	// Guard, when set, keeps the crash record of the host's settings (see
	// Guard): NewLocal sets it, so a perflab killed while the host's
	// frequencies are locked is repaired by the next one.
	Guard *Guard
	saved *lab.GovernorProfile
}

// LocalDevice is the device name of this host's crash record.
const LocalDevice = "local"

// NewLocal returns the governor of this host's live /sys.
func NewLocal() *Local {
	return &Local{Files: OS{}, Guard: &Guard{Device: LocalDevice, Files: OS{}}}
}

// Layout discovers the host's clusters, or explains plainly why it cannot.
func (g *Local) Layout(ctx context.Context) (Layout, error) {
	l, err := Discover(ctx, g.Files, nil)
	if errors.Is(err, ErrNoCPUFreq) {
		return l, fmt.Errorf("%w in this container or VM (no %s/cpu0/cpufreq): frequencies cannot be read or locked on this host",
			ErrNoCPUFreq, CPURoot)
	}
	return l, err
}

// ReadProfile reads the host's current settings.
func (g *Local) ReadProfile(ctx context.Context) (lab.GovernorProfile, error) {
	l, err := g.Layout(ctx)
	if err != nil {
		return lab.GovernorProfile{}, err
	}
	return Read(ctx, g.Files, nil, l)
}

// ApplyProfile saves the current settings once (for Restore, and in the
// crash record when there is a Guard), applies p and verifies it by
// read-back.
func (g *Local) ApplyProfile(ctx context.Context, p lab.GovernorProfile) ([]string, error) {
	l, err := g.Layout(ctx)
	if err != nil {
		return nil, err
	}
	if g.saved == nil {
		read := func(ctx context.Context) (lab.GovernorProfile, error) { return Read(ctx, g.Files, nil, l) }
		var cur lab.GovernorProfile
		if g.Guard != nil {
			cur, err = g.Guard.Begin(ctx, read)
		} else {
			cur, err = read(ctx)
		}
		if err != nil {
			return nil, err
		}
		g.saved = &cur
	}
	return Apply(ctx, g.Files, nil, l, p)
}

// Restore puts back the settings found before the first ApplyProfile —
// with a Guard, the ones this process saved in its crash record, whichever
// Local changed them — and removes the record.
func (g *Local) Restore(ctx context.Context) ([]string, error) {
	if g.Guard != nil {
		m, err := g.Guard.Restore(ctx)
		if err == nil {
			g.saved = nil
		}
		return m, err
	}
	if g.saved == nil {
		return nil, nil
	}
	l, err := g.Layout(ctx)
	if err != nil {
		return nil, err
	}
	m, err := Apply(ctx, g.Files, nil, l, *g.saved)
	if err == nil {
		g.saved = nil
	}
	return m, err
}

// RepairLeftover restores settings an earlier perflab run left on this host
// (see Guard.Repair) and returns notes saying what it did; none when there
// was nothing to do or the host has no writable cpufreq.
func (g *Local) RepairLeftover(ctx context.Context) []string {
	if g.Guard == nil {
		return nil
	}
	return RepairNotes(ctx, *g.Guard)
}

// Restorer is a governor that can put back the settings found before this
// process first changed them, and forget them (ending their crash record).
type Restorer interface {
	Restore(ctx context.Context) ([]string, error)
}

// LeftoverRepairer is a governor that can repair what a crashed perflab run
// left (see Guard.Repair), returning notes for the user.
type LeftoverRepairer interface {
	RepairLeftover(ctx context.Context) []string
}

// Keeper is a governor that can leave its profile applied on purpose: it
// forgets the original and ends the crash record, so neither its close nor
// a later perflab puts the original back.
type Keeper interface {
	KeepApplied(ctx context.Context) error
}

// KeepApplied implements Keeper.
func (g *Local) KeepApplied(ctx context.Context) error {
	g.saved = nil
	if g.Guard == nil {
		return nil
	}
	return g.Guard.End(ctx)
}

var (
	_ Keeper           = (*Local)(nil)
	_ lab.Governor     = (*Local)(nil)
	_ Restorer         = (*Local)(nil)
	_ LeftoverRepairer = (*Local)(nil)
)
