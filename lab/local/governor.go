package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/probe"
)

// Probe implements lab.Prober: the MFLOPS probe runs on this host.
func (d *Device) Probe(ctx context.Context, o lab.ProbeOptions, out chan<- lab.ProbeSample) error {
	return probe.Local{}.Probe(ctx, o, out)
}

// GovernorLayout reports the host's CPU clusters and frequency tables
// (check.Layouter).
func (d *Device) GovernorLayout(ctx context.Context) (governor.Layout, error) {
	return d.Local.Layout(ctx)
}

// CapError implements lab.CapChecker: the governor needs cpufreq, and root
// to write it.
func (d *Device) CapError(c string) error {
	if c != lab.CapGovernor {
		return nil
	}
	return cpufreqWritable(context.Background(), d.Local)
}

// cpufreqWritable says why g cannot lock frequencies: no cpufreq (a
// container or VM) or no write access to it.
func cpufreqWritable(ctx context.Context, g *governor.Local) error {
	l, err := g.Layout(ctx)
	if err != nil {
		return err
	}
	if os, ok := g.Files.(governor.OS); ok && (os.Root == "" || os.Root == "/") && len(l.Clusters) > 0 {
		p := governor.CPURoot + fmt.Sprintf("/cpu%d/cpufreq/scaling_max_freq", l.Clusters[0].CPUs[0])
		if err := syscall.Access(p, 2 /* W_OK */); err != nil {
			if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EROFS) {
				err = fs.ErrPermission
			}
			return fmt.Errorf("cpufreq not writable: needs root (%s: %w)", p, err)
		}
	}
	return nil
}

// governorProfile is the profile controls.governor (raw) names, nil for
// none, or why this host cannot apply it: an unknown profile, or cpufreq
// missing or not writable. It writes nothing (CheckControls).
func (d *Device) governorProfile(raw []byte) (*lab.GovernorProfile, error) {
	p, err := governor.Resolve(raw, d.info.Model, nil)
	if err != nil || p == nil {
		return nil, err
	}
	if err := d.CapError(lab.CapGovernor); err != nil {
		return nil, fmt.Errorf("controls.governor: %w", err)
	}
	return p, nil
}

// setupGovernor applies controls.governor, which Close puts back unless the
// profile says keep.
func (d *Device) setupGovernor(ctx context.Context, raw []byte) (*lab.Event, error) {
	p, err := d.governorProfile(raw)
	if err != nil || p == nil {
		return nil, err
	}
	mis, err := d.Local.ApplyProfile(ctx, *p)
	if err != nil {
		return nil, fmt.Errorf("controls.governor %q: %w", p.Name, err)
	}
	read, err := d.Local.ReadProfile(ctx)
	if err != nil {
		read = *p
	}
	read.Name = p.Name
	d.mu.Lock()
	d.govKeep = p.Keep
	d.govSet = true
	d.mu.Unlock()
	return &lab.Event{Type: lab.EventSettings, Settings: &lab.Settings{Profile: &read, Mismatches: mis,
		Detail: map[string]string{"governor": governor.Describe(*p)}}}, nil
}

// restoreGovernorLocked puts back the settings found before Setup applied
// controls.governor; d.mu is held.
func (d *Device) restoreGovernorLocked() error {
	if !d.govSet {
		return nil
	}
	d.govSet = false
	if d.govKeep {
		return d.Local.KeepApplied(context.Background())
	}
	mis, err := d.Local.Restore(context.Background())
	if err == nil && len(mis) > 0 {
		err = fmt.Errorf("read-back differs for %v", mis)
	}
	if err != nil {
		return fmt.Errorf("restoring the governor: %w", err)
	}
	return nil
}

// CheckWindow is the stability check window on this host (check.Paced): a
// host without a phone's thermal mass settles within a minute.
func (d *Device) CheckWindow() time.Duration { return time.Minute }

// Cooldown is the pause between tuning candidates on this host (check.Paced).
func (d *Device) Cooldown() time.Duration { return 30 * time.Second }
