package shell

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// HostRunner is a Phone that runs programs built for this host's
// architecture in place of the phone's own (a Go test binary pushed by
// perflab suite): the simulated phone has no arm64 CPU, so perflab builds
// a worker's binaries for the host when the phone is simulated, and the
// shell runs them as real processes.
type HostRunner interface {
	RunsHostBinaries() bool
}

// hostABI is the ABI name ELFABI gives this host's binaries.
func hostABI() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "arm64-v8a"
	case "386":
		return "x86"
	case "arm":
		return "armeabi-v7a"
	}
	return runtime.GOARCH
}

// runsHost reports whether the shell runs a binary of ABI abi as a host
// process.
func (e *env) runsHost(abi string) bool {
	hr, ok := e.sh.Phone.(HostRunner)
	return ok && hr.RunsHostBinaries() && abi == hostABI()
}

// execHost runs the simulated file p as a host process: its folder (the
// binary and what lies beside it, a testdata folder with it) is copied to
// a temporary folder of the host, the process runs there with the
// shell's stdin, stdout and stderr, and the folder is removed after.
// Files the program writes there do not come back to the simulated phone.
// ok is false when the host cannot start it (a file with only an ELF
// header): the phone then refuses it as a phone of its ABI would.
func (e *env) execHost(p string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	tmp, err := os.MkdirTemp("", "simdevice-exec")
	if err != nil {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: %v\n", p, err)
		return 126, true
	}
	defer os.RemoveAll(tmp)
	if err := e.mirror(path.Dir(p), tmp, 0); err != nil {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: %v\n", p, err)
		return 126, true
	}
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	cmd := exec.CommandContext(ctx, filepath.Join(tmp, path.Base(p)), args...)
	cmd.Dir = tmp
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, stdout, stderr
	var env []string
	for k, v := range e.vars {
		if isName(k) {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = append(env, "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		return 126, false
	}
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() >= 0 {
			return ee.ExitCode(), true
		}
		return 128 + 9, true
	}
	return 0, true
}

// mirror copies the simulated folder dir to the host folder to, folders
// nested at most 8 deep.
func (e *env) mirror(dir, to string, depth int) error {
	if depth > 8 {
		return nil
	}
	ents, err := e.sh.FS.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, en := range ents {
		src, dst := path.Join(dir, en.Name), filepath.Join(to, en.Name)
		if en.Name == "" || strings.ContainsAny(en.Name, "/\x00") || en.Name == "." || en.Name == ".." {
			continue
		}
		if en.Mode&ModeDir != 0 {
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
			if err := e.mirror(src, dst, depth+1); err != nil {
				return err
			}
			continue
		}
		data, err := e.sh.FS.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, os.FileMode(en.Mode&0o777)|0o600); err != nil {
			return err
		}
	}
	return nil
}

// isName reports whether k is a shell variable name (not $?, $1, ...).
func isName(k string) bool {
	for i, c := range k {
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return k != ""
}
