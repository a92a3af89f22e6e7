package devices

import (
	"context"
	"fmt"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/local"
)

func openLocal(ctx context.Context, arg string, opt Options) (lab.Device, error) {
	if arg != "" {
		return nil, fmt.Errorf("device \"local:%s\": the local device takes no argument; use \"local\"", arg)
	}
	return local.New(), nil
}

func listLocal(ctx context.Context, opt Options) ([]lab.DeviceInfo, error) {
	return []lab.DeviceInfo{local.NewProbed().Info()}, nil
}
