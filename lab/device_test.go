package lab

import (
	"context"
	"errors"
	"slices"
	"testing"
)

type plainDev struct{}

func (plainDev) Info() DeviceInfo                                    { return DeviceInfo{} }
func (plainDev) Setup(context.Context, *Experiment) ([]Event, error) { return nil, nil }
func (plainDev) RunTrial(context.Context, TrialRequest) TrialResult  { return TrialResult{} }
func (plainDev) Close() error                                        { return nil }

type probeDev struct{ plainDev }

func (probeDev) Probe(context.Context, ProbeOptions, chan<- ProbeSample) error { return nil }

type govDev struct {
	probeDev
	noRoot bool
}

func (govDev) ReadProfile(context.Context) (GovernorProfile, error)            { return GovernorProfile{}, nil }
func (govDev) ApplyProfile(context.Context, GovernorProfile) ([]string, error) { return nil, nil }
func (g govDev) CapError(c string) error {
	if c == CapGovernor && g.noRoot {
		return errors.New("needs root")
	}
	return nil
}

func TestDeriveCaps(t *testing.T) {
	tests := []struct {
		name     string
		dev      any
		reported []string
		want     []string
	}{
		{"nothing", plainDev{}, nil, []string{}},
		{"reported only, sorted, no duplicates", plainDev{}, []string{CapTmpfs, CapKillApp, CapTmpfs}, []string{CapKillApp, CapTmpfs}},
		{"prober", probeDev{}, []string{CapKillApp}, []string{CapKillApp, CapProbe}},
		{"governor", govDev{}, nil, []string{CapGovernor, CapProbe}},
		{"governor it cannot use", govDev{noRoot: true}, nil, []string{CapProbe}},
		{"a hand-listed probe is kept once", probeDev{}, []string{CapProbe}, []string{CapProbe}},
	}
	for _, tt := range tests {
		if got := DeriveCaps(tt.dev, tt.reported...); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
