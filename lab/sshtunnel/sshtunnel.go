// Package sshtunnel is an SSH connection to the host of a remote adb
// server (golang.org/x/crypto/ssh), used two ways: to dial that server on
// the host's loopback (ssh -L), and to listen on the host's loopback for
// what a phone reaches through adb reverse, relaying it back here
// (ssh -R). Keys come from ssh-agent and ~/.ssh; the host key is checked
// against known_hosts, never accepted blindly.
package sshtunnel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Target is an SSH destination: [USER@]HOST[:PORT].
type Target struct {
	User string // "" for the local user's name
	Host string
	Port int // 0 for 22
}

// ParseTarget parses "[USER@]HOST[:PORT]" (an IPv6 host in brackets).
func ParseTarget(s string) (Target, error) {
	orig := s
	var t Target
	if u, rest, ok := strings.Cut(s, "@"); ok {
		if u == "" {
			return t, fmt.Errorf("ssh target %q: empty user before @", orig)
		}
		t.User, s = u, rest
	}
	host := s
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return t, fmt.Errorf("ssh target %q: bad port %q", orig, p)
		}
		host, t.Port = h, n
	} else if strings.Count(s, ":") == 1 {
		return t, fmt.Errorf("ssh target %q: %v", orig, err)
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || strings.ContainsAny(host, " /@") {
		return t, fmt.Errorf("ssh target %q: want [USER@]HOST[:PORT]", orig)
	}
	t.Host = host
	return t, nil
}

// Addr is HOST:PORT for dialing.
func (t Target) Addr() string {
	p := t.Port
	if p == 0 {
		p = 22
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(p))
}

// String is the target as written: [USER@]HOST[:PORT].
func (t Target) String() string {
	s := t.Host
	if t.Port != 0 {
		s = net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	}
	if t.User != "" {
		s = t.User + "@" + s
	}
	return s
}

// Config says how to log in.
type Config struct {
	Target
	// KnownHosts are known_hosts files the host key must be in.
	KnownHosts []string
	// Identities are private key files to offer (unencrypted ones; a
	// passphrase-protected key is used through the agent).
	Identities []string
	// AgentSocket is ssh-agent's socket ("" for none).
	AgentSocket string
	// Timeout bounds connecting and the handshake (default 15 s).
	Timeout time.Duration
	// Alias is the host as the user named it when the ssh configuration
	// made it another (an alias of ~/.ssh/config), for messages.
	Alias string
	// Jump, when set, is the host the connection goes through
	// (ProxyJump): Target is dialled from there.
	Jump *Config
}

// DefaultConfig is what ssh itself would use for t: the user's name,
// ~/.ssh/known_hosts, ~/.ssh/id_ed25519, id_ecdsa and id_rsa, and the
// agent at $SSH_AUTH_SOCK.
func DefaultConfig(t Target) Config {
	c := Config{Target: t, AgentSocket: os.Getenv("SSH_AUTH_SOCK")}
	if c.User == "" {
		if u, err := user.Current(); err == nil {
			c.User = u.Username
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dir := filepath.Join(home, ".ssh")
		c.KnownHosts = []string{filepath.Join(dir, "known_hosts")}
		for _, k := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			c.Identities = append(c.Identities, filepath.Join(dir, k))
		}
	}
	return c
}

// Tunnel is an open SSH connection to an adb server's host.
type Tunnel struct {
	target Target
	c      *ssh.Client
	jump   *Tunnel // the ProxyJump host's connection, closed with this one

	mu       sync.Mutex
	forwards map[string]net.Listener // remote addr → local listener
	closed   bool
}

// Dial connects and logs in.
func Dial(ctx context.Context, cfg Config) (*Tunnel, error) {
	name := cfg.Target.String()
	if cfg.Alias != "" && cfg.Alias != name {
		name = cfg.Alias + " (" + name + ")"
	}
	if cfg.User == "" {
		return nil, fmt.Errorf("ssh %s: no user name (write USER@HOST)", name)
	}
	if len(cfg.KnownHosts) == 0 {
		return nil, fmt.Errorf("ssh %s: no known_hosts file to check the host key against", name)
	}
	var files []string
	for _, f := range cfg.KnownHosts {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("ssh %s: none of %s exists, so the host key cannot be checked: run `ssh %s` once to check and record it", name, strings.Join(cfg.KnownHosts, ", "), name)
	}
	check, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: known_hosts: %w", name, err)
	}
	signers, notes, closeAgent := loadSigners(cfg)
	defer closeAgent()
	if len(signers) == 0 {
		msg := fmt.Sprintf("ssh %s: no key to log in with (ssh-agent at $SSH_AUTH_SOCK, or %s)", name, strings.Join(cfg.Identities, ", "))
		if len(notes) > 0 {
			msg += ": " + strings.Join(notes, "; ")
		}
		return nil, errors.New(msg)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	cc := &ssh.ClientConfig{
		User:            cfg.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signers...)},
		HostKeyCallback: check,
		Timeout:         timeout,
	}
	var jump *Tunnel
	var nc net.Conn
	if cfg.Jump != nil {
		if jump, err = Dial(ctx, *cfg.Jump); err != nil {
			return nil, fmt.Errorf("ssh %s: through ProxyJump: %w", name, err)
		}
		if nc, err = jump.c.DialContext(ctx, "tcp", cfg.Addr()); err != nil {
			jump.Close()
			return nil, fmt.Errorf("ssh %s: through %s: %w", name, jump, err)
		}
	} else {
		d := net.Dialer{Timeout: timeout}
		if nc, err = d.DialContext(ctx, "tcp", cfg.Addr()); err != nil {
			return nil, fmt.Errorf("ssh %s: %w", name, err)
		}
	}
	fail := func(e error) (*Tunnel, error) {
		if jump != nil {
			jump.Close()
		}
		return nil, e
	}
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(timeout))
	conn, chans, reqs, err := ssh.NewClientConn(nc, cfg.Addr(), cc)
	stopped := stop()
	if err != nil {
		nc.Close()
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) {
			if len(ke.Want) == 0 {
				return fail(fmt.Errorf("ssh %s: the host key is not in %s: run `ssh %s` once to check and record it", name, strings.Join(files, ", "), cmp.Or(cfg.Alias, cfg.Target.String())))
			}
			return fail(fmt.Errorf("ssh %s: the host key does NOT match %s:%d (a changed host, or someone in between): %w", name, ke.Want[0].Filename, ke.Want[0].Line, err))
		}
		if ctx.Err() != nil {
			return fail(fmt.Errorf("ssh %s: %w", name, ctx.Err()))
		}
		return fail(fmt.Errorf("ssh %s: %w", name, err))
	}
	if !stopped {
		conn.Close()
		return fail(fmt.Errorf("ssh %s: %w", name, ctx.Err()))
	}
	nc.SetDeadline(time.Time{})
	return &Tunnel{target: cfg.Target, c: ssh.NewClient(conn, chans, reqs), jump: jump, forwards: map[string]net.Listener{}}, nil
}

// loadSigners gathers the keys to log in with: ssh-agent's, then the
// unencrypted identity files; notes say what could not be used, and
// closeAgent ends the agent's connection once logged in.
func loadSigners(cfg Config) (signers []ssh.Signer, notes []string, closeAgent func()) {
	closeAgent = func() {}
	if cfg.AgentSocket != "" {
		if c, err := net.Dial("unix", cfg.AgentSocket); err == nil {
			closeAgent = func() { c.Close() }
			if ss, err := agent.NewClient(c).Signers(); err == nil {
				signers = append(signers, ss...)
			} else {
				notes = append(notes, "ssh-agent: "+err.Error())
			}
		} else {
			notes = append(notes, "ssh-agent: "+err.Error())
		}
	}
	for _, f := range cfg.Identities {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		s, err := ssh.ParsePrivateKey(b)
		var pp *ssh.PassphraseMissingError
		if errors.As(err, &pp) {
			notes = append(notes, f+" is passphrase-protected: add it to ssh-agent (ssh-add)")
			continue
		}
		if err != nil {
			notes = append(notes, f+": "+err.Error())
			continue
		}
		signers = append(signers, s)
	}
	return signers, notes, closeAgent
}

// String names the tunnel: "ssh USER@HOST[:PORT]".
func (t *Tunnel) String() string { return "ssh " + t.target.String() }

// Host is the SSH host's name as given.
func (t *Tunnel) Host() string { return t.target.Host }

// DialContext connects to addr as dialled from the SSH host.
func (t *Tunnel) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := t.c.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: dial %s there: %w", t, addr, err)
	}
	return c, nil
}

// Listen listens on addr on the SSH host (port 0: one the host picks,
// which the listener's Addr then holds); connections to it arrive here.
func (t *Tunnel) Listen(network, addr string) (net.Listener, error) {
	ln, err := t.c.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s there (the server must allow remote forwarding: AllowTcpForwarding): %w", t, addr, err)
	}
	return ln, nil
}

// Forward returns a loopback address on this host whose connections are
// relayed to addr as dialled from the SSH host (ssh -L), for clients that
// dial by address. It listens once per addr, until Close.
func (t *Tunnel) Forward(addr string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return "", fmt.Errorf("%s: closed", t)
	}
	if ln, ok := t.forwards[addr]; ok {
		return ln.Addr().String(), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	t.forwards[addr] = ln
	go Relay(ln, func(ctx context.Context) (net.Conn, error) { return t.c.DialContext(ctx, "tcp", addr) })
	return ln.Addr().String(), nil
}

// Close ends the forwards and the connection.
func (t *Tunnel) Close() error {
	t.mu.Lock()
	t.closed = true
	for _, ln := range t.forwards {
		ln.Close()
	}
	t.forwards = nil
	t.mu.Unlock()
	err := t.c.Close()
	if t.jump != nil {
		t.jump.Close()
	}
	return err
}

// Relay accepts on ln until it is closed and joins each connection to one
// dial opens, copying both ways.
func Relay(ln net.Listener, dial func(ctx context.Context) (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			d, err := dial(ctx)
			cancel()
			if err != nil {
				c.Close()
				return
			}
			Join(c, d)
		}()
	}
}

// Join copies a→b and b→a; when one direction ends it half-closes the
// other side's write, and closes both when both are done.
func Join(a, b io.ReadWriteCloser) {
	var wg sync.WaitGroup
	cp := func(dst, src io.ReadWriteCloser) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
