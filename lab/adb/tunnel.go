package adb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/perflab/perflab/lab/sshtunnel"
)

// Tunnel connects this host and a remote adb server's host both ways
// (lab/sshtunnel over SSH): the client reaches the adb server through it,
// and the phone's adb reverse connections, which arrive on the server's
// host, come back through it.
type Tunnel interface {
	// Forward returns a loopback address here that reaches addr as dialled
	// on the server's host.
	Forward(addr string) (string, error)
	// Listen listens on the server's host; connections arrive here.
	Listen(network, addr string) (net.Listener, error)
	String() string
}

// ErrRemoteReverse is wrapped when a feature needs the phone to reach this
// host through adb reverse and the adb server is on another host with no
// tunnel back.
var ErrRemoteReverse = errors.New("adb reverse reaches the adb server's host, not this one")

// Remote reports whether the adb server is on another host: its address
// is not a loopback one, or it is reached through a tunnel.
func (c *Client) Remote() bool {
	if c.Tunnel != nil {
		return true
	}
	host, _, err := net.SplitHostPort(c.Addr)
	return err == nil && !isLoopback(host)
}

// dialAddr is where to connect to reach the server: Addr, or with a
// tunnel the server's port on the loopback of the tunnel's host.
func (c *Client) dialAddr() (string, error) {
	if c.Tunnel == nil {
		return c.Addr, nil
	}
	_, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return "", fmt.Errorf("adb server %q: %w", c.Addr, err)
	}
	a, err := c.Tunnel.Forward(net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return "", fmt.Errorf("%w at %s: %v", ErrNoServer, c.Addr, err)
	}
	return a, nil
}

// exposeLocal makes this host's loopback port local reachable where the
// phone's adb reverse connections arrive (the adb server's host), for the
// named feature, and returns the port there; close undoes it. A local
// server needs nothing; a remote one needs a tunnel, and without one the
// error says what to do.
func (c *Client) exposeLocal(feature string, local int) (port int, close func() error, err error) {
	if c.Tunnel == nil {
		if !c.Remote() {
			return local, func() error { return nil }, nil
		}
		return 0, nil, c.remoteErr(feature)
	}
	ln, err := c.Tunnel.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, fmt.Errorf("%s over %s: %w", feature, c.Tunnel, err)
	}
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(local))
	go sshtunnel.Relay(ln, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", target)
	})
	return ln.Addr().(*net.TCPAddr).Port, ln.Close, nil
}

// remoteErr is the refusal of a feature that needs adb reverse to this
// host on a remote server without a tunnel.
func (c *Client) remoteErr(feature string) error {
	host, _, _ := net.SplitHostPort(c.Addr)
	return fmt.Errorf("%s: adb server %s is on another host, so the phone's connections (%w): "+
		"pass --ssh USER@%s so perflab forwards them back over SSH, or run perflab on %s", feature, c.Addr, ErrRemoteReverse, host, host)
}
