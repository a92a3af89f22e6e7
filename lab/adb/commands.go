package adb

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/shquote"
)

// Command builds: a phone as a worker of perflab suite (or any
// experiment whose builds are commands, not apps). The builds' Files
// (for the phone's platform, android_arm64) are pushed to a private folder
// under /data/local/tmp, each trial runs the build's command there over
// adb shell, its metrics are what the command prints (`go test -bench`
// lines for Build.Output "gobench", PERFLAB_METRIC lines otherwise), and
// Close removes the folder.

// CommandBuilds reports whether exp's builds are commands for the phone's
// shell rather than apps: every build has a command and none names an
// app.
func CommandBuilds(exp *lab.Experiment) bool {
	if len(exp.Builds) == 0 {
		return false
	}
	for _, b := range exp.Builds {
		if len(b.Command) == 0 || b.APK != "" || b.Package != "" || b.App != "" {
			return false
		}
	}
	return true
}

// cmdState is a Device's command-build state.
type cmdState struct {
	cmdDir      string            // the private folder on the phone
	cmdStaged   map[string]string // Build.Files → its copy there
	cmdPlatform string            // set by SetPlatform
	cmdMode     bool              // Setup took command builds
}

// SetPlatform says what the phone runs in place of its ABI's programs
// (a simulated phone runs the host's: linux_amd64).
func (d *Device) SetPlatform(p string) {
	d.mu.Lock()
	d.cmdPlatform = p
	d.mu.Unlock()
}

// Platform is the phone's GOOS_GOARCH for Go programs built for it, from
// its primary ABI (or SetPlatform's).
func (d *Device) Platform(ctx context.Context) (string, error) {
	d.mu.Lock()
	p := d.cmdPlatform
	d.mu.Unlock()
	if p != "" {
		return p, nil
	}
	abis, err := d.abis(ctx)
	if err != nil {
		return "", err
	}
	for _, a := range abis {
		if arch, ok := map[string]string{"arm64-v8a": "arm64", "armeabi-v7a": "arm", "x86_64": "amd64", "x86": "386"}[a]; ok {
			return "android_" + arch, nil
		}
	}
	return "", fmt.Errorf("device %s: no Go platform for its ABIs %v", d.serial, abis)
}

// cmdSetup pushes the builds' files to a new private folder.
func (d *Device) cmdSetup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	platform, err := d.Platform(ctx)
	if err != nil {
		return nil, err
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	dir := "/data/local/tmp/perflab-worker-" + hex.EncodeToString(rnd[:])
	if _, err := d.c.Run(ctx, d.serial, "mkdir -p "+shquote.Quote(dir)); err != nil {
		return nil, fmt.Errorf("device %s: making %s: %w", d.serial, dir, err)
	}
	d.mu.Lock()
	d.cmdDir, d.cmdStaged, d.cmdMode = dir, map[string]string{}, true
	d.mu.Unlock()
	var n int64
	i := 0
	for _, key := range exp.ArmKeys() {
		f := exp.Builds[key].Files
		d.mu.Lock()
		_, done := d.cmdStaged[f]
		d.mu.Unlock()
		if f == "" || done {
			continue
		}
		src := f
		if fi, err := os.Stat(filepath.Join(f, platform)); err == nil && fi.IsDir() {
			src = filepath.Join(f, platform)
		}
		dst := fmt.Sprintf("%s/files%d", dir, i)
		i++
		if err := d.pushTree(ctx, src, dst, &n); err != nil {
			return nil, fmt.Errorf("device %s: pushing %s to %s: %w", d.serial, src, dst, err)
		}
		d.mu.Lock()
		d.cmdStaged[f] = dst
		d.mu.Unlock()
	}
	detail := map[string]string{"worker_dir": dir, "platform": platform}
	if n > 0 {
		detail["worker_files"] = fmt.Sprintf("%.1f MB pushed", float64(n)/1e6)
	}
	return []lab.Event{{Type: lab.EventSettings, Settings: &lab.Settings{Detail: detail}}}, nil
}

// pushTree pushes the folder src (links followed) to dst on the phone.
func (d *Device) pushTree(ctx context.Context, src, dst string, n *int64) error {
	if _, err := d.c.Run(ctx, d.serial, "mkdir -p "+shquote.Quote(dst)); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(src, e.Name())
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			if err := d.pushTree(ctx, p, path.Join(dst, e.Name()), n); err != nil {
				return err
			}
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = d.c.Push(ctx, d.serial, f, path.Join(dst, e.Name()), fi.Mode().Perm(), fi.ModTime())
		f.Close()
		if err != nil {
			return err
		}
		*n += fi.Size()
	}
	return nil
}

// cmdTrial runs the build's command in its folder on the phone.
func (d *Device) cmdTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	dir := d.cmdDir
	if s, ok := d.cmdStaged[req.Build.Files]; ok && req.Build.Files != "" {
		dir = s
	}
	d.mu.Unlock()
	if dir == "" {
		return lab.TrialResult{Status: lab.StatusFailed, Reason: "device " + d.serial + ": not set up"}
	}
	argv := make([]string, len(req.Build.Command))
	for i, a := range req.Build.Command {
		argv[i] = shquote.Quote(a)
	}
	var env []string
	for k, v := range req.Build.Env {
		env = append(env, shquote.Quote(k+"="+v))
	}
	script := "cd " + shquote.Quote(dir) + " && "
	if len(env) > 0 {
		script += "env " + strings.Join(env, " ") + " "
	}
	script += strings.Join(argv, " ")
	var stdout, stderr bytes.Buffer
	req.TrialUnderWay()
	code, err := d.c.Shell(ctx, d.serial, script, nil, &stdout, &stderr)
	if err != nil {
		return d.fail(err, "trial")
	}
	if code != 0 {
		return lab.TrialResult{Status: lab.StatusFailed, Reason: fmt.Sprintf("exit status %d: %s", code, lastLine(stderr.String()))}
	}
	res := lab.CommandResult(req.Build, stdout.Bytes())
	if res.Status != lab.StatusOK {
		if e := lastLine(stderr.String()); e != "" {
			res.Reason += " (stderr: " + e + ")"
		}
	}
	return res
}

// cmdClose removes the private folder.
func (d *Device) cmdClose(ctx context.Context) error {
	d.mu.Lock()
	dir := d.cmdDir
	d.cmdDir, d.cmdStaged, d.cmdMode = "", nil, false
	d.mu.Unlock()
	if dir == "" {
		return nil
	}
	_, err := d.c.Run(ctx, d.serial, "rm -rf "+shquote.Quote(dir))
	return err
}
