package adb

import (
	"context"
	"fmt"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/shquote"
)

// guard is the crash record of the phone's governor settings: a marker
// file on the phone (governor.MarkerPath) and a copy under this host's
// state directory, written before the first change and removed on a clean
// close (see governor.Guard).
func (d *Device) guard() governor.Guard {
	return governor.Guard{Device: "adb:" + d.serial, Marker: phoneMarker{d}, Files: d, Services: d}
}

// phoneMarker is the governor marker file on the phone, written as root
// and left readable by the shell user, so that listing the phone does not
// need root to find a leftover.
type phoneMarker struct{ d *Device }

var markerQ = shquote.Quote(governor.MarkerPath)

// ReadMarker implements governor.Marker.
func (m phoneMarker) ReadMarker(ctx context.Context) (string, error) {
	return governor.FileMarker{Files: m.d, Path: governor.MarkerPath}.ReadMarker(ctx)
}

// WriteMarker implements governor.Marker.
func (m phoneMarker) WriteMarker(ctx context.Context, s string) error {
	_, err := m.d.runRoot(ctx, "echo "+shquote.Quote(s)+" > "+markerQ+" && chmod 644 "+markerQ)
	return err
}

// RemoveMarker implements governor.Marker.
func (m phoneMarker) RemoveMarker(ctx context.Context) error {
	_, err := m.d.runRoot(ctx, "rm -f "+markerQ)
	return err
}

// repairLeftover restores governor settings an earlier perflab run left on
// the phone (killed before it could restore them), adding a note that says
// so to the device's description. Without root perflab cannot have changed
// them.
func (d *Device) repairLeftover(ctx context.Context) {
	d.mu.Lock()
	root := d.rootVia != ""
	d.mu.Unlock()
	if !root {
		return
	}
	notes := governor.RepairNotes(ctx, d.guard())
	notes = append(notes, d.unmountLeftovers(ctx)...)
	if len(notes) == 0 {
		return
	}
	d.mu.Lock()
	d.info.Notes = append(d.info.Notes, notes...)
	d.repaired = append(d.repaired, notes...)
	d.layout = nil // discovered again, with the controls restored (mpdecision running)
	d.mu.Unlock()
}

// unmountLeftovers unmounts the tmpfs mounts over apps' data that a perflab
// run which is gone left (their source is its governor.OwnerTag): left
// mounted, the next run would snapshot the killed run's last trial instead
// of the app's data, and mount over it again.
func (d *Device) unmountLeftovers(ctx context.Context) []string {
	out, err := d.c.Run(ctx, d.serial, "mount")
	if err != nil {
		return []string{"tmpfs: listing the mounts failed: " + err.Error()}
	}
	var notes []string
	for _, line := range strings.Split(out, "\n") {
		// SOURCE on TARGET type TYPE (OPTIONS)
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != "on" || f[3] != "type" || f[4] != "tmpfs" || !strings.HasPrefix(f[2], "/data/data/") {
			continue
		}
		r, ok := governor.ParseOwnerTag(f[0])
		if !ok || !r.Gone() {
			continue
		}
		if _, err := d.runRoot(ctx, "umount "+shquote.Quote(f[2])); err != nil {
			notes = append(notes, fmt.Sprintf("tmpfs: an earlier perflab run (pid %d) left %s mounted, and unmounting it failed: %v", r.PID, f[2], err))
			continue
		}
		notes = append(notes, fmt.Sprintf("unmounted the tmpfs an earlier perflab run (pid %d) left over %s", r.PID, f[2]))
	}
	return notes
}

// RepairLeftover implements governor.LeftoverRepairer: the repair was done
// when the device was opened; this returns its notes once.
func (d *Device) RepairLeftover(ctx context.Context) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.repaired
	d.repaired = nil
	return n
}

// beginGovernor returns the settings to restore later, saving them in the
// crash record before the first change.
func (d *Device) beginGovernor(ctx context.Context, l governor.Layout) error {
	d.mu.Lock()
	haveOrig := d.original != nil
	d.mu.Unlock()
	if haveOrig {
		return nil
	}
	orig, err := d.guard().Begin(ctx, func(ctx context.Context) (lab.GovernorProfile, error) {
		return governor.Read(ctx, d, d, l)
	})
	if err != nil {
		return err
	}
	orig.Name = "original"
	d.mu.Lock()
	d.original = &orig
	d.mu.Unlock()
	return nil
}

// Restore implements governor.Restorer: it puts back the settings found
// before the first ApplyProfile and ends their crash record.
func (d *Device) Restore(ctx context.Context) ([]string, error) {
	d.mu.Lock()
	orig := d.original
	d.mu.Unlock()
	if orig == nil {
		return nil, nil
	}
	l, err := d.govLayout(ctx)
	if err != nil {
		return nil, err
	}
	mis, err := governor.Apply(ctx, d, d, l, *orig)
	if err != nil {
		return mis, fmt.Errorf("restoring the governor: %w", err)
	}
	d.mu.Lock()
	d.original, d.applied, d.govRaw = nil, nil, ""
	d.mu.Unlock()
	return mis, d.guard().End(ctx)
}

// KeepApplied implements governor.Keeper: the applied profile stays after
// Close, and its crash record is ended so no later perflab undoes it.
func (d *Device) KeepApplied(ctx context.Context) error {
	d.mu.Lock()
	had := d.original != nil
	d.original = nil
	d.mu.Unlock()
	if !had {
		return nil
	}
	return d.guard().End(ctx)
}

// closeGovernor restores the original settings at Close, unless the profile
// is to be kept, and ends the crash record.
func (d *Device) closeGovernor(ctx context.Context) error {
	d.mu.Lock()
	orig, applied := d.original, d.applied
	d.mu.Unlock()
	if orig == nil {
		return nil
	}
	if applied != nil && applied.Keep {
		return d.KeepApplied(ctx)
	}
	mis, err := d.Restore(ctx)
	if err == nil && len(mis) > 0 {
		err = fmt.Errorf("restoring the governor: read-back differs for %s", strings.Join(mis, ", "))
	}
	return err
}

var (
	_ governor.Restorer = (*Device)(nil)
	_ governor.Keeper   = (*Device)(nil)

	_ governor.LeftoverRepairer = (*Device)(nil)
)
