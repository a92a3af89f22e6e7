// Package sshworker runs a session's trials on another host over SSH, as
// a worker of a device pool (perflab suite --worker ssh://HOST, or
// "device": "ssh://HOST" in an experiment file). It reaches the host
// exactly as `ssh HOST` does: through the system's OpenSSH client, so an
// alias of ~/.ssh/config with its HostName, Port, User, IdentityFile,
// UserKnownHostsFile and ProxyJump works as it does in a terminal, over
// one multiplexed connection (ControlMaster) per host. Nothing is
// installed on the host: the build's files go to a private temporary
// folder there (mktemp -d), which Close removes.
package sshworker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Target is a host as the user names it.
type Target struct {
	// ID is the device ID: "ssh://" + the rest as given.
	ID string
	// Dest is ssh's destination: an alias of the ssh configuration, or
	// user@host.
	Dest string
	// Port is the port given in the ID ("" for ssh's own choice: the
	// configuration's, else 22).
	Port string
}

// Parse reads "ssh://[user@]host[:port]" or "ssh://ALIAS" (also without
// "ssh:", as devices.Open passes "//ALIAS").
func Parse(id string) (Target, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(id, "ssh:"), "//")
	if rest == "" || strings.ContainsAny(rest, " \t/?#") {
		return Target{}, fmt.Errorf("worker %q: want ssh://[USER@]HOST[:PORT] or ssh://ALIAS (an alias of your ssh configuration)", id)
	}
	u, err := url.Parse("ssh://" + rest)
	if err != nil || u.Hostname() == "" {
		return Target{}, fmt.Errorf("worker %q: want ssh://[USER@]HOST[:PORT] or ssh://ALIAS", id)
	}
	t := Target{ID: "ssh://" + rest, Dest: u.Hostname(), Port: u.Port()}
	if u.User != nil {
		t.Dest = u.User.Username() + "@" + t.Dest
	}
	return t, nil
}

// Options say how to call ssh.
type Options struct {
	// Config is an ssh configuration file to read instead of
	// ~/.ssh/config (ssh -F); "" reads the user's own.
	Config string
	// Binary is the ssh client ("" for "ssh" on PATH).
	Binary string
}

// Client is one multiplexed connection to a host: a master ssh process
// (ControlMaster) that the commands' ssh processes share.
type Client struct {
	t      Target
	opt    Options
	ctl    string // private folder of the control socket
	master *exec.Cmd
	done   chan struct{} // closed when the master exits
	errOut *bytes.Buffer // the master's stderr
}

// Dial opens the connection: it starts the master and waits until it is
// up, or returns ssh's own words for why not (a refused key, an unknown
// host key, no route), naming the host.
func Dial(ctx context.Context, t Target, opt Options) (*Client, error) {
	ctl, err := os.MkdirTemp("", "plssh")
	if err != nil {
		return nil, err
	}
	c := &Client{t: t, opt: opt, ctl: ctl, done: make(chan struct{}), errOut: &bytes.Buffer{}}
	args := append(c.baseArgs(), "-o", "ControlMaster=yes", "-o", "ControlPersist=no",
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-N", t.Dest)
	c.master = exec.Command(c.binary(), args...)
	c.master.Stderr = c.errOut
	if err := c.master.Start(); err != nil {
		os.RemoveAll(ctl)
		return nil, fmt.Errorf("%s: starting ssh: %v", t.ID, err)
	}
	go func() { c.master.Wait(); close(c.done) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			os.RemoveAll(ctl)
			return nil, fmt.Errorf("%s: cannot connect: %s", t.ID, lastLine(c.errOut.String(), "ssh exited"))
		case <-ctx.Done():
			c.Close()
			return nil, fmt.Errorf("%s: connecting: %w", t.ID, ctx.Err())
		case <-tick.C:
			if _, err := os.Stat(c.socket()); err == nil {
				check := exec.CommandContext(ctx, c.binary(), append(c.baseArgs(), "-O", "check", t.Dest)...)
				if check.Run() == nil {
					return c, nil
				}
			}
		}
	}
}

func (c *Client) binary() string {
	if c.opt.Binary != "" {
		return c.opt.Binary
	}
	return "ssh"
}

func (c *Client) socket() string { return filepath.Join(c.ctl, "s") }

// baseArgs are the options every ssh call of the client shares.
func (c *Client) baseArgs() []string {
	var args []string
	if c.opt.Config != "" {
		args = append(args, "-F", c.opt.Config)
	}
	if c.t.Port != "" {
		args = append(args, "-p", c.t.Port)
	}
	return append(args, "-o", "BatchMode=yes", "-o", "ControlPath="+c.socket())
}

// Command is a command running script with the host's shell over the
// connection. ssh exits with 255 when the connection fails (Lost).
func (c *Client) Command(ctx context.Context, script string) *exec.Cmd {
	args := append(c.baseArgs(), "-o", "ControlMaster=no", "-T", c.t.Dest, "--", script)
	return exec.CommandContext(ctx, c.binary(), args...)
}

// Output runs script and returns its stdout; an error carries the last
// line of its stderr.
func (c *Client) Output(ctx context.Context, script string) (string, error) {
	cmd := c.Command(ctx, script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s: %s: %v: %s", c.t.ID, firstWords(script), err, lastLine(stderr.String(), "no message"))
	}
	return string(out), nil
}

// Close ends the master connection and removes the control socket's
// folder.
func (c *Client) Close() error {
	if c.master != nil && c.master.Process != nil {
		exit := exec.Command(c.binary(), append(c.baseArgs(), "-O", "exit", c.t.Dest)...)
		_ = exit.Run()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			c.master.Process.Kill()
			<-c.done
		}
	}
	return os.RemoveAll(c.ctl)
}

// IsConnectionError reports whether err is ssh's own failure (exit status
// 255: the connection broke or could not be made) rather than the remote
// command's.
func IsConnectionError(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 255
}

// lastLine is the last non-empty line of s, or def.
func lastLine(s, def string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return def
}

// firstWords is the start of a script, for an error message.
func firstWords(script string) string {
	f := strings.Fields(script)
	if len(f) > 3 {
		f = append(f[:3], "…")
	}
	return strings.Join(f, " ")
}
