package devices

import (
	"context"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sshworker"
)

// openSSH opens the worker "ssh://HOST" (arg "//HOST"): a host reached as
// `ssh HOST` reaches it (lab/sshworker); it connects at Setup.
func openSSH(ctx context.Context, arg string, opt Options) (lab.Device, error) {
	t, err := sshworker.Parse(arg)
	if err != nil {
		return nil, err
	}
	return sshworker.New(t, sshworker.Options{Config: opt.SSHConfig}), nil
}

// listSSH lists nothing: ssh hosts are named, not discovered.
func listSSH(ctx context.Context, opt Options) ([]lab.DeviceInfo, error) { return nil, nil }
