// Package sshdtest starts real OpenSSH servers (Debian's openssh-server,
// which ./test.sh installs) on free loopback ports for tests: each "host"
// is an sshd of its own with a throwaway host key, accepting a throwaway
// client key of the test's, and the test gets an ssh configuration file
// (for ssh -F) naming each host by an alias, with its HostName, Port,
// User, IdentityFile and UserKnownHostsFile, as a user's ~/.ssh/config
// would. Nothing of the machine's own ssh configuration is read or
// changed: the servers read the test's sshd_config, the clients the
// test's ssh_config.
package sshdtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SSHD is the server binary (sshd must be started by its absolute path).
const SSHD = "/usr/sbin/sshd"

// Lab is a set of hosts and the client configuration reaching them.
type Lab struct {
	Dir    string // the test's folder of keys and configurations
	Config string // ssh configuration file (ssh -F) with every alias
	Key    string // the client's private key
	hosts  map[string]*host
}

type host struct {
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts one sshd per alias and writes the client configuration;
// it skips the test when sshd or ssh-keygen is missing. The servers stop
// at the test's end. extra adds lines to the client configuration (for
// example an alias with a ProxyJump).
func Start(t testing.TB, aliases []string, extra string, opts ...Option) *Lab {
	t.Helper()
	fileKB, env := map[string]int{}, map[string]string{}
	for _, o := range opts {
		if o.fileKB > 0 {
			fileKB[o.alias] = o.fileKB
		}
		if o.env != "" {
			env[o.alias] += " " + o.env
		}
	}
	for _, bin := range []string{SSHD, "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (./test.sh installs openssh-server)", bin)
		}
	}
	// sshd started by root wants its privilege separation folder, which
	// the package's service would make at boot.
	if os.Geteuid() == 0 {
		if _, err := os.Stat("/run/sshd"); os.IsNotExist(err) {
			if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
				t.Skipf("sshd needs /run/sshd: %v", err)
			}
		}
	}
	dir, err := os.MkdirTemp("", "sshdtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l := &Lab{Dir: dir, Config: filepath.Join(dir, "ssh_config"), Key: filepath.Join(dir, "client_key"), hosts: map[string]*host{}}
	keygen := func(path string) {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "perflab-test", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	keygen(l.Key)
	hostKey := filepath.Join(dir, "host_key")
	keygen(hostKey)
	pub, err := os.ReadFile(l.Key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	var cfg, known strings.Builder
	for _, alias := range aliases {
		h := &host{port: freePort(t), done: make(chan struct{})}
		l.hosts[alias] = h
		fmt.Fprintf(&known, "[127.0.0.1]:%d %s", h.port, hostPub)
		cfg.WriteString(l.block(alias, h.port, me.Username, l.Key, ""))
		sshdCfg := filepath.Join(dir, "sshd_config_"+alias)
		conf := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\nPidFile %s\n"+
			"UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"+
			"PermitRootLogin prohibit-password\nAllowTcpForwarding yes\nLogLevel ERROR\nMaxSessions 50\nMaxStartups 50\nSetEnv TMPDIR=%s%s\n",
			h.port, hostKey, filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd_"+alias+".pid"), l.TmpDir(alias), env[alias])
		if err := os.MkdirAll(l.TmpDir(alias), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sshdCfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		h.cmd = exec.Command(SSHD, "-D", "-e", "-f", sshdCfg)
		if kb := fileKB[alias]; kb > 0 {
			// POSIX sh's ulimit -f counts 512-byte blocks; an ignored
			// SIGXFSZ stays ignored through sshd into the sessions.
			h.cmd = exec.Command("/bin/sh", "-c", fmt.Sprintf(`trap '' XFSZ; ulimit -f %d && exec "$@"`, 2*kb), "sh", SSHD, "-D", "-e", "-f", sshdCfg)
		}
		h.cmd.Stderr = &testLog{t: t, prefix: "sshd " + alias + ": "}
		if err := h.cmd.Start(); err != nil {
			t.Fatalf("starting sshd: %v", err)
		}
		go func() { h.cmd.Wait(); close(h.done) }()
		t.Cleanup(func() { l.Stop(alias) })
		waitListening(t, h, filepath.Join(dir, "sshd_"+alias+".pid"))
	}
	cfg.WriteString(extra)
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(known.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Config, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return l
}

// Option changes one host of Start.
type Option struct {
	alias  string
	fileKB int
	env    string
}

// SetEnv sets NAME=VALUE in every session of alias (sshd's SetEnv, which
// wins over the login's own; PATH too).
func SetEnv(alias, nameValue string) Option { return Option{alias: alias, env: nameValue} }

// FullDisk makes alias a host whose disk takes no file past kb kilobytes:
// its sshd, and so every session, runs with that RLIMIT_FSIZE (ulimit -f)
// and SIGXFSZ ignored, so a write past it fails as on a full disk (tar
// says "Wrote only N of M bytes", as there), without root or a mount.
func FullDisk(alias string, kb int) Option { return Option{alias: alias, fileKB: kb} }

// block is the configuration of alias for the host on port, logging in as
// user with key, with extra lines.
func (l *Lab) block(alias string, port int, user, key, extra string) string {
	return fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  ConnectTimeout 10\n%s\n",
		alias, port, user, key, filepath.Join(l.Dir, "known_hosts"), extra)
}

// Alias adds to the configuration the alias name for the host of alias
// like, logging in with key ("" for the client key the hosts accept), with
// extra lines ("  ProxyJump near\n").
func (l *Lab) Alias(t testing.TB, name, like, key, extra string) {
	t.Helper()
	if key == "" {
		key = l.Key
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(l.Config, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(l.block(name, l.Port(like), me.Username, key, extra)); err != nil {
		t.Fatal(err)
	}
}

// NewKey makes a throwaway private key no host accepts and returns its
// path.
func NewKey(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other_key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	return path
}

// TmpDir is the TMPDIR of alias's sessions: a folder of the test's, so
// that it can tell what a worker left behind.
func (l *Lab) TmpDir(alias string) string { return filepath.Join(l.Dir, "tmp-"+alias) }

// Port is alias's port.
func (l *Lab) Port(alias string) int { return l.hosts[alias].port }

// Stop stops alias's server and the sessions it serves (a host going
// away); stopping it again does nothing.
func (l *Lab) Stop(alias string) {
	h := l.hosts[alias]
	if h == nil || h.cmd.Process == nil {
		return
	}
	select {
	case <-h.done:
		return
	default:
	}
	// The listener and every session's process (sshd forks one per
	// connection, in the listener's process group until it logs in).
	pid := h.cmd.Process.Pid
	exec.Command("pkill", "-KILL", "-P", fmt.Sprint(pid)).Run()
	h.cmd.Process.Kill()
	<-h.done
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitListening waits for sshd's pid file, which it writes once it
// listens.
func waitListening(t testing.TB, h *host, pidFile string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-h.done:
			t.Fatalf("sshd on port %d exited at start (its messages are in the test log)", h.port)
		default:
		}
		if _, err := os.Stat(pidFile); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("sshd on port %d does not listen after 30 s", h.port)
}

// testLog writes a server's messages to the test log.
type testLog struct {
	t      testing.TB
	prefix string
}

func (w *testLog) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.t.Log(w.prefix + line)
	}
	return len(p), nil
}
