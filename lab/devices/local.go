package devices

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/local"
)

func openLocal(ctx context.Context, arg string, opt Options) (lab.Device, error) {
	if arg != "" {
		return nil, fmt.Errorf("device \"local:%s\": the local device takes no argument; use \"local\"", arg)
	}
	if opt.PinWorkers > 0 {
		return local.PinnedWorker(1, opt.PinWorkers), nil
	}
	return local.New(), nil
}

func listLocal(ctx context.Context, opt Options) ([]lab.DeviceInfo, error) {
	return []lab.DeviceInfo{local.NewProbed().Info()}, nil
}

// localWorker reads "local#N" (N ≥ 2), another local device for a pool of
// workers on this host (local.NewWorker).
// IsLocal reports whether id names this host: local, or a local worker
// local#N (N from 2 to 64).
func IsLocal(id string) bool {
	if id == "local" {
		return true
	}
	_, ok := localWorker(id)
	return ok
}

func localWorker(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "local#")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 2 && n <= 64
}
