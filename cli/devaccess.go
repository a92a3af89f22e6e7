package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/governor"
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
	return strings.Join(*a, ",")
}

func (a *adbFlag) Set(v string) error {
	addr, err := adb.ParseServer(v)
	if err != nil {
		return err
	}
	*a = append(*a, addr)
	return nil
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

// deviceAccess is how a command reaches devices, the --adb and --ssh flags
// of every command that takes them, written once: their text, the check of
// each value as it is parsed (adbFlag, sshFlag), logging in to the --ssh
// hosts and closing those tunnels.
//
//	var acc deviceAccess
//	acc.register(fs)
//	... fs.Parse ...
//	if !acc.openOr(ctx, "perflab run", stderr) { return exitError }
//	defer acc.close()
//	opt := acc.options() // devices.Options with ADBServers and Tunnels
type deviceAccess struct {
	adb       adbFlag
	ssh       sshFlag
	sshConfig string           // --ssh-config: ssh -F for --ssh hosts and ssh workers
	tunnels   *devices.Tunnels // opened by open, closed by close
	host      *devices.HostShare
}

// register adds --adb and --ssh to fs. With no --adb the adb backend uses
// ADB_SERVER_SOCKET, ANDROID_ADB_SERVER_PORT or 127.0.0.1:5037, as adb
// does. The adb servers on an --ssh host are reached over SSH, and their
// phones' adb reverse connections (app metrics, the record/replay proxy)
// come back over it.
func (d *deviceAccess) register(fs *flag.FlagSet) {
	fs.Var(&d.adb, "adb", "adb server `HOST:PORT` (repeatable; default $ADB_SERVER_SOCKET, $ANDROID_ADB_SERVER_PORT or 127.0.0.1:5037)")
	fs.Var(&d.ssh, "ssh", "reach the --adb servers on `[USER@]HOST[:PORT]` (or an alias of ~/.ssh/config) over SSH, and forward their phones' adb reverse (app metrics, proxy) back to this host (repeatable; the host reached as `ssh HOST` reaches it: HostName, Port, User, IdentityFile, UserKnownHostsFile and ProxyJump from the ssh configuration, keys also from ssh-agent)")
	fs.StringVar(&d.sshConfig, "ssh-config", "", "ssh configuration `FILE` to read instead of ~/.ssh/config (as ssh -F)")
}

// open logs in to every --ssh host (nothing without --ssh); close closes
// what it opened.
func (d *deviceAccess) open(ctx context.Context) error {
	if len(d.ssh) == 0 {
		return nil
	}
	cfgs := make([]sshtunnel.Config, len(d.ssh))
	for i, t := range d.ssh {
		c, err := sshtunnel.Resolve(ctx, t, d.sshConfig)
		if err != nil {
			return err
		}
		cfgs[i] = c
	}
	tun, err := devices.OpenTunnels(ctx, cfgs, d.adb)
	if err != nil {
		return err
	}
	d.tunnels = tun
	return nil
}

// openOr is open that, when it fails, says why on stderr after prefix
// ("perflab run") and returns false: the command then exits with
// exitError.
func (d *deviceAccess) openOr(ctx context.Context, prefix string, stderr io.Writer) bool {
	if err := d.open(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
		return false
	}
	return true
}

// options are the device options that reach the --adb servers, through
// the tunnels open opened.
func (d *deviceAccess) options() devices.Options {
	if d.host == nil {
		if dir, err := hostLockDir(); err == nil {
			d.host = &devices.HostShare{Dir: dir}
		}
	}
	return devices.Options{ADBServers: d.adb, Tunnels: d.tunnels, SSHConfig: d.sshConfig, Host: d.host}
}

// hostLockDir is where the devices' locks are: the state folder's
// locks/, beside the governor crash records (a phone's, lab/adb; this
// host's, devices.HostShare and perflab watch).
func hostLockDir() (string, error) {
	dir, err := governor.StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "locks"), nil
}

// close closes the tunnels open opened (none without --ssh).
func (d *deviceAccess) close() {
	d.tunnels.Close()
	d.tunnels = nil
}
