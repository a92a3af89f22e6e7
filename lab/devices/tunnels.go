package devices

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/sshtunnel"
)

// Tunnels are the SSH connections to remote adb servers' hosts (perflab's
// --ssh), one per host, shared by every phone on them: the adb servers are
// reached through them, and the phones' adb reverse connections (app
// metrics, the record/replay proxy) come back through them.
type Tunnels struct {
	byServer map[string]*sshtunnel.Tunnel // adb server address → its host's tunnel
	all      []*sshtunnel.Tunnel
}

// OpenTunnels logs in to each SSH target and assigns it the adb servers on
// its host (a server's host is the target's host as written). A target
// with no server is an error, as is a failed login. With no servers the
// default ones count.
func OpenTunnels(ctx context.Context, cfgs []sshtunnel.Config, servers []string) (*Tunnels, error) {
	if len(servers) == 0 {
		servers = adb.DefaultServers()
	}
	t := &Tunnels{byServer: map[string]*sshtunnel.Tunnel{}}
	for _, cfg := range cfgs {
		var mine []string
		for _, s := range servers {
			if host, _, err := net.SplitHostPort(s); err == nil && strings.EqualFold(host, cfg.Host) {
				mine = append(mine, s)
			}
		}
		if len(mine) == 0 {
			t.Close()
			return nil, fmt.Errorf("--ssh %s: no adb server on %s (add --adb %s:5037, the adb server's port on that host)", cfg.Target, cfg.Host, cfg.Host)
		}
		for _, s := range mine {
			if _, dup := t.byServer[s]; dup {
				t.Close()
				return nil, fmt.Errorf("--ssh %s: adb server %s already has a tunnel", cfg.Target, s)
			}
		}
		tun, err := sshtunnel.Dial(ctx, cfg)
		if err != nil {
			t.Close()
			return nil, err
		}
		t.all = append(t.all, tun)
		for _, s := range mine {
			t.byServer[s] = tun
		}
	}
	return t, nil
}

// For returns the tunnel to server's host, nil when it has none.
func (t *Tunnels) For(server string) *sshtunnel.Tunnel {
	if t == nil {
		return nil
	}
	return t.byServer[server]
}

// Close closes every tunnel.
func (t *Tunnels) Close() error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, tun := range t.all {
		if err := tun.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	t.all, t.byServer = nil, nil
	return errors.Join(errs...)
}

// adbClients returns a client per adb server (the default ones when none
// are given), each through its tunnel when it has one.
func adbClients(opt Options) []*adb.Client {
	servers := opt.ADBServers
	if len(servers) == 0 {
		servers = adb.DefaultServers()
	}
	cs := make([]*adb.Client, len(servers))
	for i, s := range servers {
		cs[i] = adb.NewClient(s)
		if tun := opt.Tunnels.For(s); tun != nil {
			cs[i].Tunnel = tun
		}
	}
	return cs
}
