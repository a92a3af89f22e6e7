package sshworker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/shquote"
)

// Device is a host reached over SSH that runs command builds: a worker.
// Its trials' metrics are what the command prints: `go test -bench`
// result lines (Build.Output "gobench") or metric lines (PERFLAB_METRIC).
type Device struct {
	t   Target
	opt Options

	mu       sync.Mutex
	c        *Client
	platform string            // GOOS_GOARCH of the host, once connected
	dir      string            // the private temporary folder on the host
	staged   map[string]string // Build.Files → its copy on the host
}

// New is the device for t; it connects at Setup (or Platform).
func New(t Target, opt Options) *Device {
	return &Device{t: t, opt: opt, staged: map[string]string{}}
}

// Info describes the worker.
func (d *Device) Info() lab.DeviceInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	info := lab.DeviceInfo{ID: d.t.ID, Backend: "ssh", Model: d.t.Dest, Caps: []string{lab.CapCommandBuilds}}
	if d.platform != "" {
		info.Props = map[string]string{"platform": d.platform}
	}
	return info
}

// CheckBuilds refuses builds without a command.
func (d *Device) CheckBuilds(exp *lab.Experiment) error {
	for _, key := range exp.ArmKeys() {
		if len(exp.Builds[key].Command) == 0 {
			return fmt.Errorf("builds.%s.command: an ssh worker runs commands; this build has none", key)
		}
	}
	return nil
}

// connect dials the host once and learns its platform.
func (d *Device) connect(ctx context.Context) (*Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.c != nil {
		return d.c, nil
	}
	c, err := Dial(ctx, d.t, d.opt)
	if err != nil {
		return nil, err
	}
	out, err := c.Output(ctx, "uname -sm")
	if err != nil {
		c.Close()
		return nil, err
	}
	plat, err := GoPlatform(out)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %v", d.t.ID, err)
	}
	d.c, d.platform = c, plat
	return c, nil
}

// Platform connects (once) and returns the host's GOOS_GOARCH, as Go
// names it (linux_amd64), for cross-compiling what it will run.
func (d *Device) Platform(ctx context.Context) (string, error) {
	if _, err := d.connect(ctx); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.platform, nil
}

// LookPath reports whether the host runs program (command -v, in the
// login shell's PATH): an error naming the host and the program when not.
func (d *Device) LookPath(ctx context.Context, program string) error {
	c, err := d.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Output(ctx, "command -v "+shquote.Quote(program)); err != nil {
		if IsConnectionError(err) {
			return err
		}
		return fmt.Errorf("%s has no %s in its PATH", d.t.ID, program)
	}
	return nil
}

// GoPlatform reads `uname -sm` as GOOS_GOARCH.
func GoPlatform(uname string) (string, error) {
	f := strings.Fields(uname)
	if len(f) != 2 {
		return "", fmt.Errorf("uname -sm printed %q, want the kernel and the machine", strings.TrimSpace(uname))
	}
	goos := map[string]string{"Linux": "linux", "Darwin": "darwin", "FreeBSD": "freebsd", "OpenBSD": "openbsd", "NetBSD": "netbsd"}[f[0]]
	goarch := map[string]string{"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm", "armv6l": "arm",
		"i686": "386", "i386": "386", "riscv64": "riscv64", "ppc64le": "ppc64le", "s390x": "s390x", "loongarch64": "loong64"}[f[1]]
	if goos == "" || goarch == "" {
		return "", fmt.Errorf("uname -sm %q: no Go platform for it", strings.TrimSpace(uname))
	}
	return goos + "_" + goarch, nil
}

// Setup connects, makes the private folder on the host and copies every
// build's Files there.
func (d *Device) Setup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	if err := d.CheckBuilds(exp); err != nil {
		return nil, err
	}
	c, err := d.connect(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.Output(ctx, `mktemp -d "${TMPDIR:-/tmp}/perflab-worker.XXXXXX"`)
	if err != nil {
		return nil, fmt.Errorf("making a temporary folder: %w", err)
	}
	d.mu.Lock()
	d.dir = strings.TrimSpace(out)
	dir, plat := d.dir, d.platform
	d.mu.Unlock()
	var files []string
	for _, key := range exp.ArmKeys() {
		if f := exp.Builds[key].Files; f != "" && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	var copied int64
	for i, f := range files {
		src := f
		if fi, err := os.Stat(filepath.Join(f, plat)); err == nil && fi.IsDir() {
			src = filepath.Join(f, plat)
		}
		dst := fmt.Sprintf("%s/files%d", dir, i)
		n, err := d.copyTree(ctx, c, src, dst)
		if err != nil {
			return nil, fmt.Errorf("copying %s to %s:%s: %w", src, d.t.ID, dst, err)
		}
		d.mu.Lock()
		d.staged[f] = dst
		d.mu.Unlock()
		copied += n
	}
	detail := map[string]string{"worker": d.t.ID, "platform": plat, "worker_dir": dir}
	if copied > 0 {
		detail["worker_files"] = fmt.Sprintf("%.1f MB copied", float64(copied)/1e6)
	}
	return []lab.Event{{Type: lab.EventSettings, Settings: &lab.Settings{Detail: detail}}}, nil
}

// copyTree sends the folder src (following links: a test binary's
// testdata may be one) as a tar stream to dst on the host.
func (d *Device) copyTree(ctx context.Context, c *Client, src, dst string) (int64, error) {
	cmd := c.Command(ctx, fmt.Sprintf("mkdir -p %s && tar -xf - -C %s", shquote.Quote(dst), shquote.Quote(dst)))
	pr, pw := io.Pipe()
	cmd.Stdin = pr
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var n int64
	werr := func() error {
		tw := tar.NewWriter(pw)
		if err := addTree(tw, src, ".", &n); err != nil {
			return err
		}
		return tw.Close()
	}()
	pw.CloseWithError(werr)
	err := cmd.Wait()
	if werr != nil {
		return n, werr
	}
	if err != nil {
		return n, fmt.Errorf("%v: %s", err, tarError(stderr.String()))
	}
	return n, nil
}

// tarError is what tar said went wrong: its first lines (the cause: "tar:
// ./x.test: Wrote only 4096 of 10240 bytes" on a full disk), not its
// closing "Exiting with failure status".
func tarError(stderr string) string {
	var keep []string
	for _, l := range strings.Split(stderr, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "Exiting with failure status") && len(keep) < 2 {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return lastLine(stderr, "no message")
	}
	return strings.Join(keep, "; ")
}

// addTree writes the files under dir (following links) to tw as name.
func addTree(tw *tar.Writer, dir, name string, n *int64) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		rel := name + "/" + e.Name()
		switch {
		case fi.IsDir():
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: fi.ModTime()}); err != nil {
				return err
			}
			if err := addTree(tw, path, rel, n); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			hdr := &tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: fi.ModTime()}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			w, err := io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
			*n += w
		}
	}
	return nil
}

// RunTrial runs the build's command in its folder on the host (the copy
// of Build.Files, else the private folder) and reads its metrics. A
// broken connection is a lost device (the pool redoes the round on
// another); an interrupted trial's processes on the host are killed.
func (d *Device) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	c, root, dir := d.c, d.dir, d.dir
	if s, ok := d.staged[req.Build.Files]; ok && req.Build.Files != "" {
		dir = s
	}
	d.mu.Unlock()
	if c == nil || dir == "" {
		return lab.TrialResult{Status: lab.StatusFailed, Reason: d.t.ID + ": not set up"}
	}
	var env []string
	keys := make([]string, 0, len(req.Build.Env))
	for k := range req.Build.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, shquote.Quote(k+"="+req.Build.Env[k]))
	}
	argv := make([]string, len(req.Build.Command))
	for i, a := range req.Build.Command {
		argv[i] = shquote.Quote(a)
	}
	pidFile := shquote.Quote(fmt.Sprintf("%s/.trial-%d.pid", root, req.Index))
	// sshd starts the command in a session of its own: its shell's pid is
	// the group every process of the trial is in, which an interrupted
	// trial kills.
	script := fmt.Sprintf("cd %s && echo $$ > %s && exec env %s %s", shquote.Quote(dir), pidFile, strings.Join(env, " "), strings.Join(argv, " "))
	cmd := c.Command(ctx, script)
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	// A multiplexed ssh hands its stdout to the master connection, which
	// holds it open while the host's command runs: once ssh itself has
	// gone, stop waiting for the pipe.
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	req.TrialUnderWay()
	err := cmd.Run()
	if ctx.Err() != nil {
		d.kill(pidFile)
		return lab.TrialResult{Status: lab.StatusFailed, Reason: "interrupted"}
	}
	if err != nil {
		if IsConnectionError(err) {
			return lab.TrialResult{Status: lab.StatusFailed, Lost: true, Reason: fmt.Sprintf("%s: connection lost: %s", d.t.ID, lastLine(stderr.String(), "ssh exited"))}
		}
		return lab.TrialResult{Status: lab.StatusFailed, Reason: fmt.Sprintf("%v: %s", err, lastLine(stderr.String(), "no message"))}
	}
	res := lab.CommandResult(req.Build, stdout.Bytes())
	if res.Status != lab.StatusOK {
		if e := strings.TrimSpace(stderr.String()); e != "" {
			res.Reason += " (stderr: " + lastLine(e, "") + ")"
		}
	}
	return res
}

// kill ends an interrupted trial's processes on the host (its session's
// process group), with a deadline of its own: the run's context is over.
func (d *Device) kill(pidFile string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d.mu.Lock()
	c := d.c
	d.mu.Unlock()
	_, _ = c.Output(ctx, fmt.Sprintf("p=$(cat %s 2>/dev/null) && kill -TERM -- -$p 2>/dev/null; true", pidFile))
}

// Close removes the private folder from the host and ends the connection.
func (d *Device) Close() error {
	d.mu.Lock()
	c, dir := d.c, d.dir
	d.c, d.dir = nil, ""
	d.mu.Unlock()
	if c == nil {
		return nil
	}
	var err error
	if dir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err = c.Output(ctx, "rm -rf "+shquote.Quote(dir))
		cancel()
	}
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return err
}
