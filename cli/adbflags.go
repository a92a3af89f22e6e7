package cli

import (
	"context"
	"flag"
	"strings"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/sshtunnel"
)

// adbFlag is the repeatable --adb HOST:PORT flag every device-taking
// command shares. Each value is checked and normalised as it is parsed
// ("5038" and "tcp:5038" mean 127.0.0.1:5038), so a typo fails with the
// flag's name rather than as a connection error later.
type adbFlag []string

func (a *adbFlag) String() string {
	if a == nil {
		return ""
	}
	s := ""
	for i, v := range *a {
		if i > 0 {
			s += ","
		}
		s += v
	}
	return s
}

func (a *adbFlag) Set(v string) error {
	addr, err := adb.ParseServer(v)
	if err != nil {
		return err
	}
	*a = append(*a, addr)
	return nil
}

// addADBFlag registers --adb on fs. With no --adb the adb backend uses
// ADB_SERVER_SOCKET, ANDROID_ADB_SERVER_PORT or 127.0.0.1:5037, as adb does.
//
//	servers := addADBFlag(fs)
//	... fs.Parse ...
//	opt := devices.Options{ADBServers: *servers}
func addADBFlag(fs *flag.FlagSet) *[]string {
	var a adbFlag
	fs.Var(&a, "adb", "adb server `HOST:PORT` (repeatable; default $ADB_SERVER_SOCKET, $ANDROID_ADB_SERVER_PORT or 127.0.0.1:5037)")
	return (*[]string)(&a)
}

// sshFlag is the repeatable --ssh [USER@]HOST[:PORT] flag: each value is
// parsed as it is given, so a typo fails with the flag's name.
type sshFlag []sshtunnel.Target

func (s *sshFlag) String() string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, t := range *s {
		parts = append(parts, t.String())
	}
	return strings.Join(parts, ",")
}

func (s *sshFlag) Set(v string) error {
	t, err := sshtunnel.ParseTarget(v)
	if err != nil {
		return err
	}
	*s = append(*s, t)
	return nil
}

// addSSHFlag registers --ssh on fs, beside --adb: the adb servers on an
// --ssh host are reached over SSH, and their phones' adb reverse
// connections (app metrics, the record/replay proxy) come back over it.
func addSSHFlag(fs *flag.FlagSet) *[]sshtunnel.Target {
	var s sshFlag
	fs.Var(&s, "ssh", "reach the --adb servers on `[USER@]HOST[:PORT]` over SSH, and forward their phones' adb reverse (app metrics, proxy) back to this host (repeatable; keys from ssh-agent or ~/.ssh, host key checked against ~/.ssh/known_hosts)")
	return (*[]sshtunnel.Target)(&s)
}

// openTunnels logs in to every --ssh target (nil when there is none); the
// caller closes the result.
func openTunnels(ctx context.Context, targets []sshtunnel.Target, servers []string) (*devices.Tunnels, error) {
	if len(targets) == 0 {
		return nil, nil
	}
	cfgs := make([]sshtunnel.Config, len(targets))
	for i, t := range targets {
		cfgs[i] = sshtunnel.DefaultConfig(t)
	}
	return devices.OpenTunnels(ctx, cfgs, servers)
}
