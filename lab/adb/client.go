// Package adb is perflab's Android backend: a client for one or more adb
// servers (local or remote) and a lab.Device that runs trials on a phone.
//
// gadb covers the basics but drops offline and unauthorized devices, has
// no exit codes, mixes stderr into stdout, buffers output and gives up on
// any command longer than 60 s, and has no reverse forwarding. This client
// talks the adb server's smart-socket protocol itself where it must:
// host:devices-l for listing every state, shell,v2 over host:transport for
// exit codes and separate, streamed stdout and stderr with no time limit,
// sync for push, and reverse:forward through host:transport.
package adb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/lab/adb/wire"
)

// DefaultServer is the adb server address used when none is configured.
const DefaultServer = "127.0.0.1:5037"

// DefaultServers returns the adb server adb itself would use:
// ADB_SERVER_SOCKET (tcp:HOST:PORT or tcp:PORT), else
// ANDROID_ADB_SERVER_PORT on 127.0.0.1, else 127.0.0.1:5037.
func DefaultServers() []string {
	if s := os.Getenv("ADB_SERVER_SOCKET"); s != "" {
		if addr, err := ParseServer(s); err == nil {
			return []string{addr}
		}
	}
	if p := os.Getenv("ANDROID_ADB_SERVER_PORT"); p != "" {
		if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 65536 {
			return []string{net.JoinHostPort("127.0.0.1", p)}
		}
	}
	return []string{DefaultServer}
}

// ParseServer normalises an adb server address: "HOST:PORT", "PORT",
// "tcp:HOST:PORT" or "tcp:PORT".
func ParseServer(s string) (string, error) {
	orig := s
	s = strings.TrimPrefix(strings.TrimSpace(s), "tcp:")
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 65535 {
			return "", fmt.Errorf("adb server %q: port out of range", orig)
		}
		return net.JoinHostPort("127.0.0.1", s), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("adb server %q: want HOST:PORT", orig)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return "", fmt.Errorf("adb server %q: bad port %q", orig, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Client talks to one adb server.
type Client struct {
	Addr string
	// DialTimeout bounds connecting to the server (default 5 s).
	DialTimeout time.Duration
	// Tunnel, when set, reaches the server (on the tunnel's host, at
	// Addr's port on its loopback) and brings the phone's adb reverse
	// connections back here: see Remote and exposeLocal.
	Tunnel Tunnel
}

// NewClient returns a client for the adb server at addr (HOST:PORT).
func NewClient(addr string) *Client { return &Client{Addr: addr} }

// ErrDeviceLost is wrapped by errors that mean the device is gone: it went
// offline, was disconnected, or the connection to it broke mid-command.
var ErrDeviceLost = errors.New("device lost")

// ErrNoServer is wrapped when the adb server cannot be reached.
var ErrNoServer = errors.New("adb server not reachable")

func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{Timeout: c.DialTimeout}
	if d.Timeout == 0 {
		d.Timeout = 5 * time.Second
	}
	addr, err := c.dialAddr()
	if err != nil {
		return nil, err
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v (start one with: adb -P PORT start-server)", ErrNoServer, c.Addr, err)
	}
	return conn, nil
}

// watch closes conn when ctx ends, so blocked reads return; call the
// returned stop when done.
func watch(ctx context.Context, conn net.Conn) (stop func() bool) {
	return context.AfterFunc(ctx, func() { conn.Close() })
}

func request(conn net.Conn, req string) error {
	if _, err := conn.Write(wire.AppendRequest(nil, req)); err != nil {
		return err
	}
	return wire.ReadStatus(conn)
}

// hostQuery sends a host: request and reads its length-prefixed answer.
func (c *Client) hostQuery(ctx context.Context, req string) (string, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	defer watch(ctx, conn)()
	if err := request(conn, req); err != nil {
		return "", fmt.Errorf("adb %s: %w", req, err)
	}
	s, err := wire.ReadHexString(conn)
	if err != nil {
		return "", fmt.Errorf("adb %s: %w", req, ctxErr(ctx, err))
	}
	return s, nil
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Entry is one line of host:devices-l.
type Entry struct {
	Serial string
	State  string // device, offline, unauthorized, authorizing, no permissions, ...
	Attrs  map[string]string
	Server string
}

// Devices lists every device the server knows, in every state.
func (c *Client) Devices(ctx context.Context) ([]Entry, error) {
	s, err := c.hostQuery(ctx, "host:devices-l")
	if err != nil {
		return nil, err
	}
	return ParseDevices(s, c.Addr), nil
}

// ParseDevices parses host:devices-l output. States may be several words
// ("no permissions (user ...)"); attributes are key:value words.
func ParseDevices(s, server string) []Entry {
	var out []Entry
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		e := Entry{Serial: f[0], Attrs: map[string]string{}, Server: server}
		var state []string
		for _, w := range f[1:] {
			if k, v, ok := strings.Cut(w, ":"); ok && isAttrKey(k) && len(state) > 0 {
				e.Attrs[k] = v
				continue
			}
			if len(e.Attrs) == 0 {
				state = append(state, w)
			}
		}
		e.State = strings.Join(state, " ")
		out = append(out, e)
	}
	return out
}

func isAttrKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// transport opens a connection switched to serial's transport and then
// to service on the device.
func (c *Client) open(ctx context.Context, serial, service string) (net.Conn, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	if err := request(conn, "host:transport:"+serial); err != nil {
		conn.Close()
		return nil, deviceErr(serial, err)
	}
	if err := request(conn, service); err != nil {
		conn.Close()
		return nil, deviceErr(serial, fmt.Errorf("%s: %w", service, err))
	}
	return conn, nil
}

// deviceErr marks errors that mean the device is unreachable.
func deviceErr(serial string, err error) error {
	s := err.Error()
	if strings.Contains(s, "offline") || strings.Contains(s, "not found") ||
		strings.Contains(s, "no devices") || strings.Contains(s, "closed") ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("device %s: %w: %v", serial, ErrDeviceLost, err)
	}
	return fmt.Errorf("device %s: %w", serial, err)
}

// ExitError is a shell command's non-zero exit.
type ExitError struct {
	Cmd    string
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", e.Cmd, e.Code)
	}
	return fmt.Sprintf("%s: exit status %d: %s", e.Cmd, e.Code, msg)
}

// Shell runs cmd on the device with the shell v2 protocol: the exit status
// is returned, stdout and stderr stream separately as they arrive, stdin
// (may be nil) is sent and closed, and there is no time limit but ctx.
// err is non-nil only when the command could not run to completion.
func (c *Client) Shell(ctx context.Context, serial, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	conn, err := c.open(ctx, serial, "shell,v2,raw:"+cmd)
	if err != nil {
		return -1, err
	}
	defer conn.Close()
	defer watch(ctx, conn)()
	go func() {
		if stdin != nil {
			buf := make([]byte, 32*1024)
			for {
				n, err := stdin.Read(buf)
				if n > 0 {
					if _, werr := conn.Write(wire.AppendShellPacket(nil, wire.ShellStdin, buf[:n])); werr != nil {
						return
					}
				}
				if err != nil {
					break
				}
			}
		}
		conn.Write(wire.AppendShellPacket(nil, wire.ShellCloseStdin, nil))
	}()
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	r := bufio.NewReaderSize(conn, 64*1024)
	for {
		id, data, err := wire.ReadShellPacket(r, 16<<20)
		if err != nil {
			if ctx.Err() != nil {
				return -1, ctx.Err()
			}
			return -1, deviceErr(serial, fmt.Errorf("shell %q: connection closed before the exit status: %w", cmd, err))
		}
		switch id {
		case wire.ShellStdout:
			if _, err := stdout.Write(data); err != nil {
				return -1, err
			}
		case wire.ShellStderr:
			if _, err := stderr.Write(data); err != nil {
				return -1, err
			}
		case wire.ShellExit:
			if len(data) != 1 {
				return -1, fmt.Errorf("shell %q: malformed exit packet", cmd)
			}
			return int(data[0]), nil
		}
	}
}

// Run runs cmd and returns its stdout; a non-zero exit is an *ExitError
// carrying stderr.
func (c *Client) Run(ctx context.Context, serial, cmd string) (string, error) {
	var out, errb bytes.Buffer
	code, err := c.Shell(ctx, serial, cmd, nil, &out, &errb)
	if err != nil {
		return out.String(), err
	}
	if code != 0 {
		return out.String(), &ExitError{Cmd: cmd, Code: code, Stderr: errb.String()}
	}
	return out.String(), nil
}

// Push writes data to remote on the device with the given mode (sync SEND).
func (c *Client) Push(ctx context.Context, serial string, data io.Reader, remote string, mode os.FileMode, mtime time.Time) error {
	conn, err := c.open(ctx, serial, "sync:")
	if err != nil {
		return err
	}
	defer conn.Close()
	defer watch(ctx, conn)()
	spec := fmt.Sprintf("%s,%d", remote, uint32(mode.Perm())|0o100000)
	w := bufio.NewWriterSize(conn, wire.SyncMaxData+8)
	w.Write(wire.AppendSync(nil, wire.SyncSEND, uint32(len(spec)), []byte(spec)))
	buf := make([]byte, wire.SyncMaxData)
	for {
		n, rerr := io.ReadFull(data, buf)
		if n > 0 {
			w.Write(wire.AppendSync(nil, wire.SyncDATA, uint32(n), buf[:n]))
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("push %s: %w", remote, rerr)
		}
	}
	w.Write(wire.AppendSync(nil, wire.SyncDONE, uint32(mtime.Unix()), nil))
	if err := w.Flush(); err != nil {
		return deviceErr(serial, fmt.Errorf("push %s: %w", remote, err))
	}
	id, n, err := wire.ReadSyncHeader(conn)
	if err != nil {
		return deviceErr(serial, fmt.Errorf("push %s: %w", remote, ctxErr(ctx, err)))
	}
	if id == wire.SyncFAIL {
		msg := make([]byte, n)
		io.ReadFull(conn, msg)
		return fmt.Errorf("push %s: %s", remote, msg)
	}
	if id != wire.SyncOKAY {
		return fmt.Errorf("push %s: unexpected reply %q", remote, id)
	}
	conn.Write(wire.AppendSync(nil, wire.SyncQUIT, 0, nil))
	return nil
}

// Reverse makes connections to devicePort on the device reach hostPort on
// the adb server's host (adb reverse tcp:devicePort tcp:hostPort).
func (c *Client) Reverse(ctx context.Context, serial string, devicePort, hostPort int) error {
	return c.reverseCmd(ctx, serial, fmt.Sprintf("reverse:forward:tcp:%d;tcp:%d", devicePort, hostPort))
}

// ReverseRemove removes the reverse forward of devicePort.
func (c *Client) ReverseRemove(ctx context.Context, serial string, devicePort int) error {
	return c.reverseCmd(ctx, serial, fmt.Sprintf("reverse:killforward:tcp:%d", devicePort))
}

func (c *Client) reverseCmd(ctx context.Context, serial, req string) error {
	conn, err := c.open(ctx, serial, req)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer watch(ctx, conn)()
	// The first OKAY (above) opened the service; the device answers the
	// request with a second OKAY or FAIL.
	if err := wire.ReadStatus(conn); err != nil {
		return deviceErr(serial, fmt.Errorf("%s: %w", req, ctxErr(ctx, err)))
	}
	return nil
}

// ReverseList lists the device's reverse forwards as "tcp:R tcp:L" lines.
func (c *Client) ReverseList(ctx context.Context, serial string) ([]string, error) {
	conn, err := c.open(ctx, serial, "reverse:list-forward")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer watch(ctx, conn)()
	s, err := wire.ReadHexString(conn)
	if err != nil {
		return nil, deviceErr(serial, err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 {
			out = append(out, f[1]+" "+f[2])
		}
	}
	return out, nil
}
