// Package manifest records what the checked-in perflab-probe builds were
// made from (probe.sum beside them): a digest of the probe's sources, as
// the go command lists them for each target, and of each build. go
// generate writes it after building; TestEmbeddedProbeIsCurrent compares
// the sources of the day and the builds with it, which finds a stale
// build in a second where rebuilding for two architectures from a cold
// cache takes a minute of both cores.
package manifest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// File is the manifest's name, beside the builds.
const File = "probe.sum"

// Target is one build: its Android ABI, GOARCH, GOARM and file name.
type Target struct {
	ABI, GOARCH, GOARM, File string
}

// Entry is one line of the manifest: what ("source", "binary" or "go"),
// for which ABI ("" for go) and its value.
type Entry struct {
	What, ABI, Value string
}

// Sources digests what the go command builds the probe (pkg, a package
// pattern run in dir) from for t with flags: every file of the main
// module's packages by content, every other module by path and version,
// the standard library by the toolchain's version, which is recorded on
// its own line.
func Sources(dir, pkg string, t Target, flags []string) (string, error) {
	cmd := exec.Command("go", "list", "-deps", "-json", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+t.GOARCH, "GOARM="+t.GOARM)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s for %s: %v", pkg, t.ABI, err)
	}
	var lines []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Dir     string
			Standard            bool
			GoFiles, EmbedFiles []string
			Module              *struct {
				Path, Version string
				Main          bool
			}
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("go list %s: %v", pkg, err)
		}
		switch {
		case p.Standard:
		case p.Module == nil || !p.Module.Main:
			if p.Module != nil {
				lines = append(lines, "module "+p.Module.Path+"@"+p.Module.Version)
			}
		default:
			for _, f := range append(p.GoFiles, p.EmbedFiles...) {
				sum, err := fileSum(filepath.Join(p.Dir, f))
				if err != nil {
					return "", err
				}
				lines = append(lines, "file "+p.ImportPath+"/"+f+" "+sum)
			}
		}
	}
	sort.Strings(lines)
	lines = append(lines, "flags "+strings.Join(flags, " "))
	h := sha256.Sum256([]byte(strings.Join(dedup(lines), "\n")))
	return hex.EncodeToString(h[:]), nil
}

// dedup drops repeated lines of sorted lines (a module listed once per
// package).
func dedup(lines []string) []string {
	var out []string
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return out
}

// fileSum is the SHA-256 of a file, in hex.
func fileSum(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// GoVersion is the toolchain's version (go env GOVERSION).
func GoVersion(dir string) (string, error) {
	cmd := exec.Command("go", "env", "GOVERSION")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Make is the manifest of the builds in dir (the probebin folder) of pkg
// for targets.
func Make(dir, pkg string, targets []Target, flags []string) ([]Entry, error) {
	v, err := GoVersion(dir)
	if err != nil {
		return nil, err
	}
	out := []Entry{{What: "go", Value: v}}
	for _, t := range targets {
		src, err := Sources(dir, pkg, t, flags)
		if err != nil {
			return nil, err
		}
		bin, err := fileSum(filepath.Join(dir, t.File))
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{"source", t.ABI, src}, Entry{"binary", t.ABI, bin})
	}
	return out, nil
}

// Write writes entries as the manifest text.
func Write(w io.Writer, entries []Entry) error {
	fmt.Fprintln(w, "# perflab-probe builds and what they were built from: go generate ./lab/adb/probebin writes this file")
	for _, e := range entries {
		if _, err := fmt.Fprintln(w, strings.Join(strings.Fields(e.What+" "+e.ABI+" "+e.Value), " ")); err != nil {
			return err
		}
	}
	return nil
}

// Read reads a manifest written by Write; a bad line is named by its
// number.
func Read(r io.Reader, name string) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "go" && len(f) == 2:
			out = append(out, Entry{What: "go", Value: f[1]})
		case (f[0] == "source" || f[0] == "binary") && len(f) == 3:
			out = append(out, Entry{f[0], f[1], f[2]})
		default:
			return nil, fmt.Errorf("%s:%d: want \"go VERSION\", \"source ABI SHA256\" or \"binary ABI SHA256\", got %q", name, n, sc.Text())
		}
	}
	return out, sc.Err()
}
