package adb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/electricbubble/gadb"
)

// What goes through gadb (github.com/electricbubble/gadb v0.1.0): the
// requests it gets right — the server version, connect and disconnect,
// forward, and sync LIST and RECV (list, stat, pull). The rest is this
// package's own client (client.go): shell v2 (gadb's plain shell has no
// exit status and mixes stderr into stdout), devices -l (gadb drops
// unauthorized phones and has no state), push (gadb's Push loses the last
// chunk), reverse (gadb has none), and long reads (gadb sets a 60 s read
// deadline). docs/adb.md ("adb: what uses gadb and why") has the table.
//
// gadb takes no context: calls run in a goroutine and return when ctx ends;
// the abandoned call ends by itself at gadb's 60 s read deadline at most.

// gadbClient returns gadb's client for c's server.
func (c *Client) gadbClient(ctx context.Context) (gadb.Client, error) {
	addr, err := c.dialAddr()
	if err != nil {
		return gadb.Client{}, err
	}
	host, port, err := splitHostPort(addr, 5037)
	if err != nil {
		return gadb.Client{}, fmt.Errorf("adb server %q: %w", c.Addr, err)
	}
	g, err := withCtx(ctx, func() (gadb.Client, error) { return gadb.NewClientWith(host, port) })
	if err != nil {
		if ctx.Err() != nil {
			return g, ctx.Err()
		}
		return g, fmt.Errorf("%w at %s: %v (start one with: adb -P PORT start-server)", ErrNoServer, c.Addr, err)
	}
	return g, nil
}

// gadbDevice returns gadb's handle on serial, which gadb only makes by
// listing the server's devices (online ones only).
func (c *Client) gadbDevice(ctx context.Context, serial string) (gadb.Device, error) {
	g, err := c.gadbClient(ctx)
	if err != nil {
		return gadb.Device{}, err
	}
	devs, err := withCtx(ctx, g.DeviceList)
	if err != nil {
		return gadb.Device{}, fmt.Errorf("adb host:devices-l: %w", err)
	}
	for _, d := range devs {
		if d.Serial() == serial {
			return d, nil
		}
	}
	return gadb.Device{}, deviceErr(serial, fmt.Errorf("device %s not found or not online on adb server %s: %w", serial, c.Addr, ErrDeviceLost))
}

// withCtx runs f and returns its result, or ctx's error when ctx ends first.
func withCtx[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func splitHostPort(addr string, defPort int) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) && strings.Contains(ae.Err, "missing port") {
			return addr, defPort, nil
		}
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	return host, port, nil
}

// Version returns the adb server's protocol version (through gadb).
func (c *Client) Version(ctx context.Context) (int, error) {
	g, err := c.gadbClient(ctx)
	if err != nil {
		return 0, err
	}
	v, err := withCtx(ctx, g.ServerVersion)
	if err != nil {
		return 0, fmt.Errorf("adb host:version: %w", err)
	}
	return v, nil
}

// Connect asks the server to connect to a device over TCP (adb connect,
// through gadb; port 5555 when addr has none). adb prints failures yet
// exits 0; this returns them as errors.
func (c *Client) Connect(ctx context.Context, addr string) (string, error) {
	host, port, err := splitHostPort(addr, 5555)
	if err != nil {
		return "", fmt.Errorf("adb connect %s: %w", addr, err)
	}
	g, err := c.gadbClient(ctx)
	if err != nil {
		return "", err
	}
	if _, err := withCtx(ctx, func() (struct{}, error) { return struct{}{}, g.Connect(host, port) }); err != nil {
		return "", fmt.Errorf("adb connect %s: %s", addr, strings.TrimPrefix(err.Error(), "adb connect: "))
	}
	return "connected to " + net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// Disconnect asks the server to drop a TCP device (adb disconnect, through
// gadb).
func (c *Client) Disconnect(ctx context.Context, addr string) error {
	host, port, err := splitHostPort(addr, 5555)
	if err != nil {
		return fmt.Errorf("adb disconnect %s: %w", addr, err)
	}
	g, err := c.gadbClient(ctx)
	if err != nil {
		return err
	}
	if _, err := withCtx(ctx, func() (struct{}, error) { return struct{}{}, g.Disconnect(host, port) }); err != nil {
		return fmt.Errorf("adb disconnect %s: %s", addr, strings.TrimPrefix(err.Error(), "adb disconnect: "))
	}
	return nil
}

// Forward makes connections to hostPort on the adb server's host reach
// devicePort on the device (adb forward tcp:hostPort tcp:devicePort,
// through gadb).
func (c *Client) Forward(ctx context.Context, serial string, hostPort, devicePort int) error {
	d, err := c.gadbDevice(ctx, serial)
	if err != nil {
		return err
	}
	_, err = withCtx(ctx, func() (struct{}, error) { return struct{}{}, d.Forward(hostPort, devicePort) })
	if err != nil {
		return deviceErr(serial, fmt.Errorf("adb forward tcp:%d tcp:%d: %w", hostPort, devicePort, err))
	}
	return nil
}

// ForwardRemove removes the forward of hostPort (adb forward --remove,
// through gadb).
func (c *Client) ForwardRemove(ctx context.Context, serial string, hostPort int) error {
	d, err := c.gadbDevice(ctx, serial)
	if err != nil {
		return err
	}
	_, err = withCtx(ctx, func() (struct{}, error) { return struct{}{}, d.ForwardKill(hostPort) })
	if err != nil {
		return deviceErr(serial, fmt.Errorf("adb forward --remove tcp:%d: %w", hostPort, err))
	}
	return nil
}

// ForwardList lists the device's forwards as "tcp:HOST tcp:DEVICE" pairs
// (through gadb).
func (c *Client) ForwardList(ctx context.Context, serial string) ([]string, error) {
	d, err := c.gadbDevice(ctx, serial)
	if err != nil {
		return nil, err
	}
	fl, err := withCtx(ctx, d.ForwardList)
	if err != nil {
		return nil, fmt.Errorf("adb forward --list: %w", err)
	}
	out := make([]string, 0, len(fl))
	for _, f := range fl {
		out = append(out, f.Local+" "+f.Remote)
	}
	return out, nil
}

// FileInfo describes a file on the device, as sync LIST reports it.
type FileInfo struct {
	Name    string
	Mode    uint32 // Unix mode bits (S_IFDIR 0o040000, permissions)
	Size    int64  // modulo 4 GiB: sync LIST has 32 bits
	ModTime time.Time
}

// IsDir reports whether the entry is a directory.
func (f FileInfo) IsDir() bool { return f.Mode&0o170000 == 0o040000 }

// List lists a directory on the device, without "." and ".." (sync LIST,
// through gadb). A missing directory lists as empty, as adb's LIST does.
func (c *Client) List(ctx context.Context, serial, dir string) ([]FileInfo, error) {
	d, err := c.gadbDevice(ctx, serial)
	if err != nil {
		return nil, err
	}
	ents, err := withCtx(ctx, func() ([]gadb.DeviceFileInfo, error) { return d.List(dir) })
	if err != nil {
		return nil, deviceErr(serial, fmt.Errorf("list %s: %w", dir, err))
	}
	out := make([]FileInfo, 0, len(ents))
	for _, e := range ents {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		out = append(out, FileInfo{Name: e.Name, Mode: uint32(e.Mode), Size: int64(e.Size), ModTime: e.LastModified})
	}
	return out, nil
}

// Stat describes one file on the device: gadb v0.1.0 has no sync STAT, so
// it is its entry in the parent directory's listing. A missing file is an
// error wrapping fs.ErrNotExist.
func (c *Client) Stat(ctx context.Context, serial, p string) (FileInfo, error) {
	dir, name := path.Split(path.Clean(p))
	ents, err := c.List(ctx, serial, dir)
	if err != nil {
		return FileInfo{}, err
	}
	for _, e := range ents {
		if e.Name == name {
			return e, nil
		}
	}
	return FileInfo{}, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

// Pull copies a file from the device to w (sync RECV, through gadb). The
// file is held in memory until it is complete, so w sees nothing of a pull
// cut short by ctx.
func (c *Client) Pull(ctx context.Context, serial, remote string, w io.Writer) error {
	d, err := c.gadbDevice(ctx, serial)
	if err != nil {
		return err
	}
	data, err := withCtx(ctx, func() ([]byte, error) {
		var b bytes.Buffer
		err := d.Pull(remote, &b)
		return b.Bytes(), err
	})
	if err != nil {
		return deviceErr(serial, fmt.Errorf("pull %s: %w", remote, err))
	}
	_, err = w.Write(data)
	return err
}
