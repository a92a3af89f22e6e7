package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/sshworker"
)

// suiteWorkers is the pool: --workers N local workers (local, local#2,
// ...) unless only --worker/--workers-file name workers, then those.
func suiteWorkers(n int, nSet bool, specs []string, file string) ([]string, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--workers-file: %v", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line, _, _ = strings.Cut(line, "#")
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			if strings.ContainsAny(line, " \t") {
				return nil, fmt.Errorf("%s:%d: %q: one worker a line", file, i+1, line)
			}
			specs = append(specs, line)
		}
		if len(specs) == 0 {
			return nil, fmt.Errorf("%s lists no worker", file)
		}
	}
	var ids []string
	if nSet || len(specs) == 0 {
		ids = append(ids, "local")
		for i := 2; i <= n; i++ {
			ids = append(ids, fmt.Sprintf("local#%d", i))
		}
	}
	for _, w := range specs {
		switch {
		case strings.HasPrefix(w, "ssh://"):
			if _, err := sshworker.Parse(w); err != nil {
				return nil, err
			}
		case devices.IsLocal(w) || strings.HasPrefix(w, "adb:"):
		default:
			return nil, fmt.Errorf("--worker %q: want ssh://HOST, adb:SERIAL, adb:model=MODEL, local or local#N", w)
		}
		if slices.Contains(ids, w) {
			return nil, fmt.Errorf("--worker %s is given twice", w)
		}
		ids = append(ids, w)
	}
	return ids, nil
}

// workerPlatforms connects to every remote worker, all at once (so that
// a host that refuses the key, or a phone that is gone, is said before
// anything is built, and a pool of many hosts waits for the slowest, not
// for their sum) and returns the platforms to build for, this host's
// first: an ssh host's from its uname -sm, a phone's from its ABI (a
// simulated phone runs the serving host's programs). Workers are said,
// and the first that fails is returned, in the order given.
func workerPlatforms(ctx context.Context, ids []string, opt devices.Options, cachegrind bool, stderr io.Writer) ([]string, error) {
	type probed struct {
		plat string
		err  error
	}
	res := make([]probed, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		if !strings.HasPrefix(id, "ssh://") && !strings.HasPrefix(id, "adb:") {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].plat, res[i].err = workerPlatform(ctx, id, opt, cachegrind)
		}()
	}
	wg.Wait()
	plats := []string{lab.HostPlatform()}
	for i, r := range res {
		if r.err != nil {
			return nil, r.err
		}
		if r.plat == "" {
			continue // this host
		}
		fmt.Fprintf(stderr, "worker %s: %s\n", ids[i], r.plat)
		if !slices.Contains(plats, r.plat) {
			plats = append(plats, r.plat)
		}
	}
	return plats, nil
}

// workerPlatform connects to the remote worker id and returns its
// platform, checked for cachegrind when asked.
func workerPlatform(ctx context.Context, id string, opt devices.Options, cachegrind bool) (string, error) {
	if cachegrind && strings.HasPrefix(id, "adb:") {
		return "", fmt.Errorf("--measure cachegrind needs valgrind beside the benchmarks, which phones lack: %s", id)
	}
	d, err := devices.Open(ctx, id, opt)
	if err != nil {
		return "", err
	}
	defer d.Close()
	pl, ok := d.(interface {
		Platform(context.Context) (string, error)
	})
	if !ok {
		return "", fmt.Errorf("worker %s cannot run test binaries", id)
	}
	plat, err := pl.Platform(ctx)
	if err == nil && cachegrind {
		err = cachegrindWorker(ctx, d, id, plat)
	}
	return plat, err
}

// cachegrindWorker checks that the remote worker id, of platform plat,
// can run a cachegrind suite's trials: perflab's own binary is copied
// beside the benchmarks (so the host must be of this host's platform) and
// runs the host's valgrind.
func cachegrindWorker(ctx context.Context, d lab.Device, id, plat string) error {
	if plat != lab.HostPlatform() {
		return fmt.Errorf("--measure cachegrind runs perflab itself beside the benchmarks: %s is %s, this perflab is built for %s", id, plat, lab.HostPlatform())
	}
	lp, ok := d.(interface {
		LookPath(context.Context, string) error
	})
	if !ok {
		return fmt.Errorf("--measure cachegrind: %s cannot say whether it has valgrind", id)
	}
	if err := lp.LookPath(ctx, "valgrind"); err != nil {
		return fmt.Errorf("--measure cachegrind needs valgrind on every worker: %w", err)
	}
	return nil
}
