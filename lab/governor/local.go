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
	saved *lab.GovernorProfile
}

// NewLocal returns the governor of this host's live /sys.
func NewLocal() *Local { return &Local{Files: OS{}} }

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

// ApplyProfile saves the current settings once (for Restore), applies p and
// verifies it by read-back.
func (g *Local) ApplyProfile(ctx context.Context, p lab.GovernorProfile) ([]string, error) {
	l, err := g.Layout(ctx)
	if err != nil {
		return nil, err
	}
	if g.saved == nil {
		cur, err := Read(ctx, g.Files, nil, l)
		if err != nil {
			return nil, err
		}
		g.saved = &cur
	}
	return Apply(ctx, g.Files, nil, l, p)
}

// Restore puts back the settings found before the first ApplyProfile.
func (g *Local) Restore(ctx context.Context) ([]string, error) {
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

var _ lab.Governor = (*Local)(nil)
