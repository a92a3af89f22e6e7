// Command genmanifest writes probe.sum beside the perflab-probe builds
// (go generate ./lab/adb/probebin runs it after building them): what each
// build was made from and its digest (package manifest).
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/perflab/perflab/lab/adb/probebin"
	"github.com/perflab/perflab/lab/adb/probebin/internal/manifest"
)

func main() {
	var targets []manifest.Target
	for _, t := range probebin.Targets() {
		targets = append(targets, manifest.Target{ABI: t.ABI, GOARCH: t.GOARCH, GOARM: t.GOARM, File: t.File})
	}
	entries, err := manifest.Make(".", probebin.Package, targets, probebin.BuildFlags)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genmanifest:", err)
		os.Exit(1)
	}
	var b bytes.Buffer
	if err := manifest.Write(&b, entries); err != nil {
		fmt.Fprintln(os.Stderr, "genmanifest:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(manifest.File, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genmanifest:", err)
		os.Exit(1)
	}
}
