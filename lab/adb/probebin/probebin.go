// Package probebin embeds perflab-probe (lab/probe/cmd/perflab-probe)
// cross-built for Android phones: static linux/arm64 and linux/arm (ARMv7)
// executables, built reproducibly by go generate and checked in. The adb
// backend pushes the one matching the phone's ABI and runs it.
//
// After changing the probe, regenerate with:
//
//	go generate ./lab/adb/probebin
//
// which also writes probe.sum: what the builds were made from
// (genmanifest). TestEmbeddedProbeIsCurrent fails while the checked-in
// builds are stale.
package probebin

import (
	_ "embed"
	"fmt"
	"strings"
)

// BuildFlags are the go build flags that make the builds reproducible.
var BuildFlags = []string{"-buildvcs=false", "-trimpath", "-ldflags=-s -w -buildid="}

//go:generate env CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -buildvcs=false -trimpath "-ldflags=-s -w -buildid=" -o perflab-probe-arm64 ../../probe/cmd/perflab-probe
//go:generate env CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 go build -buildvcs=false -trimpath "-ldflags=-s -w -buildid=" -o perflab-probe-arm ../../probe/cmd/perflab-probe
//go:generate go run ./genmanifest

// Package is the probe's package, as go generate builds it from here.
const Package = "../../probe/cmd/perflab-probe"

//go:embed perflab-probe-arm64
var arm64 []byte

//go:embed perflab-probe-arm
var arm []byte

// Target is one embedded build.
type Target struct {
	ABI    string // Android ABI name
	GOARCH string
	GOARM  string
	File   string // the checked-in build's file name, beside this package
	Binary []byte
}

// Targets lists the embedded builds.
func Targets() []Target {
	return []Target{
		{ABI: "arm64-v8a", GOARCH: "arm64", File: "perflab-probe-arm64", Binary: arm64},
		{ABI: "armeabi-v7a", GOARCH: "arm", GOARM: "7", File: "perflab-probe-arm", Binary: arm},
	}
}

// ForABIs returns the build for the first ABI in abis (a phone's
// ro.product.cpu.abilist, best first) that has one.
func ForABIs(abis []string) (Target, error) {
	for _, a := range abis {
		for _, t := range Targets() {
			if t.ABI == strings.TrimSpace(a) {
				return t, nil
			}
		}
	}
	return Target{}, fmt.Errorf("no perflab-probe build for ABIs %s (have arm64-v8a, armeabi-v7a)", strings.Join(abis, ","))
}
