package adb

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
)

// The governor profiles of an adb device: read, applied, and the
// built-in ones for its model.

func (d *Device) govLayout(ctx context.Context) (governor.Layout, error) {
	d.mu.Lock()
	l := d.layout
	d.mu.Unlock()
	if l != nil {
		return *l, nil
	}
	lay, err := governor.Discover(ctx, d, d)
	if err != nil {
		return governor.Layout{}, err
	}
	d.mu.Lock()
	d.layout = &lay
	d.mu.Unlock()
	return lay, nil
}

// ReadProfile implements lab.Governor.
func (d *Device) ReadProfile(ctx context.Context) (lab.GovernorProfile, error) {
	l, err := d.govLayout(ctx)
	if err != nil {
		return lab.GovernorProfile{}, err
	}
	return governor.Read(ctx, d, d, l)
}

// ApplyProfile implements lab.Governor: writes p through sysfs as root and
// reads every file back. The first call saves the original settings in the
// crash record (see guard), which Close restores unless p.Keep.
func (d *Device) ApplyProfile(ctx context.Context, p lab.GovernorProfile) ([]string, error) {
	l, err := d.govLayout(ctx)
	if err != nil {
		return nil, err
	}
	if err := governor.Validate(l, p); err != nil {
		return nil, err
	}
	if err := d.beginGovernor(ctx, l); err != nil {
		return nil, err
	}
	mis, err := governor.Apply(ctx, d, d, l, p)
	if err != nil {
		return mis, err
	}
	d.mu.Lock()
	d.applied = &p
	d.mu.Unlock()
	return mis, nil
}

// SetBuiltins sets how profile names the device knows besides tuned ones
// (controls.governor "recommended", ...) are resolved; nil knows none.
// Call it before Setup.
func (d *Device) SetBuiltins(r governor.Resolver) {
	d.mu.Lock()
	d.builtins = r
	d.mu.Unlock()
}

func (d *Device) builtinProfiles() governor.Resolver {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.builtins
}

func (d *Device) applyGovernor(ctx context.Context, raw json.RawMessage) ([]lab.Event, error) {
	d.mu.Lock()
	same := d.govRaw == string(raw) && d.applied != nil
	d.mu.Unlock()
	if same {
		return nil, nil
	}
	p, err := governor.Resolve(raw, d.Info().Model, d.builtinProfiles())
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, nil
	}
	mis, err := d.ApplyProfile(ctx, *p)
	if err != nil {
		return nil, fmt.Errorf("governor profile %q: %w", p.Name, err)
	}
	d.mu.Lock()
	d.govRaw = string(raw)
	d.mu.Unlock()
	read, rerr := d.ReadProfile(ctx)
	if rerr != nil {
		read = *p
	}
	ev := lab.Event{Type: lab.EventSettings, Settings: &lab.Settings{Profile: &read, Mismatches: mis,
		Detail: map[string]string{"governor": governor.Describe(*p), "via": d.rootVia}}}
	return []lab.Event{ev}, nil
}
