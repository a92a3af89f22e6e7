// Package simdevice serves a simulated Android phone over the device side of
// the adb wire protocol, so Debian's real adb server can `adb connect` to it
// and perflab's adb backend is exercised end to end without hardware.
//
// The server speaks CNXN/OPEN/OKAY/WRTE/CLSE with one outstanding WRTE per
// stream, and offers the services perflab and the adb command line use:
// shell (plain and v2 with exit codes), exec, sync (STAT/STA2/LIST/SEND/
// RECV), and reverse forwarding, including connections the device opens to
// reversed ports. What the shell does is up to the Device it is given.
package simdevice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab/adb/wire"
)

// Device is what the server exposes: a shell and a file system.
type Device interface {
	// Shell runs one command line and returns its exit status.
	Shell(ctx context.Context, cmdline string, stdin io.Reader, stdout, stderr io.Writer) int
	// Stat describes path; ok is false when it does not exist.
	Stat(path string) (FileInfo, bool)
	// ReadFile returns a regular file's contents.
	ReadFile(path string) ([]byte, error)
	// WriteFile creates or replaces a regular file (sync SEND).
	WriteFile(path string, data []byte, mode uint32, mtime time.Time) error
	// ReadDir lists a directory.
	ReadDir(path string) ([]FileInfo, error)
}

// FileInfo describes one file for sync STAT/STA2/LIST.
type FileInfo struct {
	Name  string
	Mode  uint32 // including S_IFDIR/S_IFREG bits
	Size  int64
	Mtime time.Time
}

// Unix file type bits used in FileInfo.Mode.
const (
	ModeDir  uint32 = 0o040000
	ModeReg  uint32 = 0o100000
	ModeLink uint32 = 0o120000
)

// Config describes the device as announced in the CNXN banner.
type Config struct {
	Product string // ro.product.name
	Model   string // ro.product.model
	Name    string // ro.product.device
	// Root says adbd runs as root (what the root: service answers).
	Root bool
	// Unauthorized makes the device demand RSA authentication and never
	// accept it, so adb lists it as "unauthorized" (a phone whose user has
	// not tapped "Allow USB debugging").
	Unauthorized bool
	// Logf, when set, receives protocol diagnostics.
	Logf func(format string, args ...any)
}

// Server serves one simulated device to any number of adb servers.
type Server struct {
	cfg Config
	dev Device

	mu    sync.Mutex
	ln    net.Listener
	conns map[*conn]bool
	done  bool
	wg    sync.WaitGroup
}

// NewServer returns a server for dev. Call Serve or ListenAndServe.
func NewServer(dev Device, cfg Config) *Server {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Server{cfg: cfg, dev: dev, conns: map[*conn]bool{}}
}

// Listen binds addr (e.g. "127.0.0.1:0") and returns the listener's address.
// Serve must be called afterwards.
func (s *Server) Listen(addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	return ln.Addr(), nil
}

// UseListener makes the server accept on ln, which it then owns, instead
// of binding an address with Listen. Serve must be called afterwards.
func (s *Server) UseListener(ln net.Listener) net.Addr {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	return ln.Addr()
}

// Serve accepts adb servers' connections until ctx is cancelled or Close is
// called. It returns nil after Close.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return errors.New("simdevice: Serve before Listen")
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			done := s.done
			s.mu.Unlock()
			if done {
				return nil
			}
			return err
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			nc.Close()
			return nil
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve(ctx)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Close stops listening, drops every connection (the adb server then shows
// the device offline) and waits for the connection handlers to return.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	s.done = true
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// Connected reports how many adb servers are connected and past CNXN.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.online() {
			n++
		}
	}
	return n
}

// ErrNoReverse is returned by DialReverse when no adb server has reversed
// the port: opening it anyway would make the adb server abort.
var ErrNoReverse = errors.New("no adb reverse set for this port")

// DialReverse opens a connection from the device to the host through a
// reverse forward set on devicePort ("adb reverse tcp:devicePort tcp:L").
func (s *Server) DialReverse(ctx context.Context, devicePort int) (io.ReadWriteCloser, error) {
	spec := fmt.Sprintf("tcp:%d", devicePort)
	s.mu.Lock()
	var target *conn
	var dest string
	for c := range s.conns {
		if d, ok := c.reverse(spec); ok {
			target, dest = c, d
			break
		}
	}
	s.mu.Unlock()
	if target == nil {
		return nil, fmt.Errorf("connect to localhost:%d: %w", devicePort, ErrNoReverse)
	}
	return target.open(ctx, dest)
}

// Reverses lists the reverse forwards in force as "tcp:R tcp:L" pairs.
func (s *Server) Reverses() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for c := range s.conns {
		c.mu.Lock()
		for r, l := range c.reverses {
			out = append(out, r+" "+l)
		}
		c.mu.Unlock()
	}
	return out
}

// AUTH message types.
const (
	authToken     = 1
	authSignature = 2
)

// conn is one adb server's transport connection.
type conn struct {
	srv *Server
	nc  net.Conn
	wmu sync.Mutex

	mu        sync.Mutex
	maxData   uint32
	connected bool
	streams   map[uint32]*stream
	nextID    uint32
	reverses  map[string]string
	closed    chan struct{}
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{srv: s, nc: nc, maxData: 4096, streams: map[uint32]*stream{}, nextID: 1,
		reverses: map[string]string{}, closed: make(chan struct{})}
}

func (c *conn) online() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected
}

func (c *conn) reverse(spec string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.reverses[spec]
	return d, ok && c.connected
}

func (c *conn) send(m wire.Message) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return wire.WriteMessage(c.nc, m)
}

func (c *conn) logf(format string, args ...any) { c.srv.cfg.Logf(format, args...) }

func (c *conn) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		c.nc.Close()
		close(c.closed)
		c.mu.Lock()
		ss := make([]*stream, 0, len(c.streams))
		for _, s := range c.streams {
			ss = append(ss, s)
		}
		c.streams = map[uint32]*stream{}
		c.mu.Unlock()
		for _, s := range ss {
			s.remoteClosed()
		}
	}()
	for {
		m, err := wire.ReadMessage(c.nc, wire.MaxPayload*4)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.logf("simdevice: read: %v", err)
			}
			return
		}
		if err := c.handle(ctx, m); err != nil {
			c.logf("simdevice: %v", err)
			return
		}
	}
}

func (c *conn) banner() string {
	cfg := c.srv.cfg
	return fmt.Sprintf("device::ro.product.name=%s;ro.product.model=%s;ro.product.device=%s;features=shell_v2,stat_v2",
		cfg.Product, cfg.Model, cfg.Name)
}

func (c *conn) handle(ctx context.Context, m wire.Message) error {
	switch m.Cmd {
	case wire.CmdCNXN:
		max := m.Arg1
		if max > wire.MaxPayload {
			max = wire.MaxPayload
		}
		if max < 1024 {
			max = 1024
		}
		c.logf("simdevice: CNXN from host (%q)", strings.TrimRight(string(m.Data), "\x00"))
		if c.srv.cfg.Unauthorized {
			return c.send(wire.Message{Cmd: wire.CmdAUTH, Arg0: authToken, Data: make([]byte, 20)})
		}
		c.mu.Lock()
		c.maxData = max
		c.connected = true
		c.mu.Unlock()
		return c.send(wire.Message{Cmd: wire.CmdCNXN, Arg0: wire.Version, Arg1: wire.MaxPayload, Data: []byte(c.banner())})
	case wire.CmdAUTH:
		if c.srv.cfg.Unauthorized && m.Arg0 == authSignature {
			// Reject every signature; the host then offers its public
			// key and waits for the user, who never answers.
			return c.send(wire.Message{Cmd: wire.CmdAUTH, Arg0: authToken, Data: make([]byte, 20)})
		}
		return nil
	case wire.CmdSTLS:
		return nil
	case wire.CmdOPEN:
		name := strings.TrimRight(string(m.Data), "\x00")
		if m.Arg0 == 0 {
			return fmt.Errorf("OPEN %q with local id 0", name)
		}
		h := c.service(name)
		if h == nil {
			c.logf("simdevice: refusing service %q", name)
			return c.send(wire.Message{Cmd: wire.CmdCLSE, Arg0: 0, Arg1: m.Arg0})
		}
		s := c.newStream(m.Arg0)
		if err := c.send(wire.Message{Cmd: wire.CmdOKAY, Arg0: s.local, Arg1: s.remote}); err != nil {
			return err
		}
		go func() {
			h(ctx, s)
			s.Close()
		}()
		return nil
	case wire.CmdOKAY:
		s := c.stream(m.Arg1)
		if s == nil {
			return nil
		}
		s.okay(m.Arg0)
		return nil
	case wire.CmdWRTE:
		s := c.stream(m.Arg1)
		if s == nil {
			// Tell the host the stream is gone so it does not wait forever.
			return c.send(wire.Message{Cmd: wire.CmdCLSE, Arg0: 0, Arg1: m.Arg0})
		}
		s.push(m.Data)
		return nil
	case wire.CmdCLSE:
		if s := c.stream(m.Arg1); s != nil {
			s.remoteClosed()
		}
		return nil
	case wire.CmdSYNC:
		return nil
	}
	return fmt.Errorf("unexpected message %s", m)
}

func (c *conn) newStream(remote uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextID
	c.nextID++
	s := &stream{c: c, local: id, remote: remote, acks: make(chan struct{}, 1),
		opened: make(chan struct{}), done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	if remote != 0 {
		close(s.opened)
	}
	c.streams[id] = s
	return s
}

func (c *conn) stream(id uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

func (c *conn) drop(id uint32) {
	c.mu.Lock()
	delete(c.streams, id)
	c.mu.Unlock()
}

// open starts a device-initiated stream to dest (e.g. "tcp:8080" on the host).
func (c *conn) open(ctx context.Context, dest string) (*stream, error) {
	s := c.newStream(0)
	if err := c.send(wire.Message{Cmd: wire.CmdOPEN, Arg0: s.local, Data: append([]byte(dest), 0)}); err != nil {
		c.drop(s.local)
		return nil, err
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-s.opened:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("host refused %s", dest)
	case <-c.closed:
		return nil, errors.New("adb server disconnected")
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	case <-t.C:
		s.Close()
		return nil, fmt.Errorf("host did not answer OPEN %s", dest)
	}
}

// stream is one adb stream seen from the device: an io.ReadWriteCloser.
type stream struct {
	c      *conn
	local  uint32
	remote uint32 // set at creation or by the host's OKAY to our OPEN

	mu     sync.Mutex
	cond   *sync.Cond
	inq    [][]byte
	eof    bool
	acks   chan struct{}
	opened chan struct{}
	done   chan struct{}
	once   sync.Once
	wmu    sync.Mutex
}

func (s *stream) okay(remote uint32) {
	s.mu.Lock()
	if s.remote == 0 {
		s.remote = remote
		s.mu.Unlock()
		close(s.opened)
		return
	}
	s.mu.Unlock()
	select {
	case s.acks <- struct{}{}:
	default:
	}
}

func (s *stream) push(b []byte) {
	s.mu.Lock()
	if len(b) > 0 {
		s.inq = append(s.inq, b)
	} else {
		// An empty WRTE still needs its OKAY.
		go s.c.send(wire.Message{Cmd: wire.CmdOKAY, Arg0: s.local, Arg1: s.remote})
	}
	s.mu.Unlock()
	s.cond.Broadcast()
}

// Read returns data the host wrote, acknowledging each WRTE once consumed.
func (s *stream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.inq) == 0 && !s.eof {
		s.cond.Wait()
	}
	if len(s.inq) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.inq[0])
	if n == len(s.inq[0]) {
		s.inq = s.inq[1:]
		if !s.eof {
			// Ready for the next WRTE.
			go s.c.send(wire.Message{Cmd: wire.CmdOKAY, Arg0: s.local, Arg1: s.remote})
		}
	} else {
		s.inq[0] = s.inq[0][n:]
	}
	return n, nil
}

// Write sends p in WRTE messages, waiting for the host's OKAY after each.
func (s *stream) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.c.mu.Lock()
	max := int(s.c.maxData)
	s.c.mu.Unlock()
	written := 0
	for len(p) > 0 {
		n := min(len(p), max)
		select {
		case <-s.done:
			return written, io.ErrClosedPipe
		default:
		}
		if err := s.c.send(wire.Message{Cmd: wire.CmdWRTE, Arg0: s.local, Arg1: s.remote, Data: p[:n]}); err != nil {
			return written, err
		}
		select {
		case <-s.acks:
		case <-s.done:
			return written, io.ErrClosedPipe
		case <-s.c.closed:
			return written, io.ErrClosedPipe
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// Close sends CLSE (once) and forgets the stream.
func (s *stream) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		remote := s.remote
		s.eof = true
		s.mu.Unlock()
		s.cond.Broadcast()
		s.c.drop(s.local)
		close(s.done)
		if remote != 0 {
			s.c.send(wire.Message{Cmd: wire.CmdCLSE, Arg0: s.local, Arg1: remote})
		}
	})
	return nil
}

// remoteClosed handles the host's CLSE: no CLSE is sent back.
func (s *stream) remoteClosed() {
	s.once.Do(func() {
		s.mu.Lock()
		s.eof = true
		s.mu.Unlock()
		s.cond.Broadcast()
		s.c.drop(s.local)
		close(s.done)
	})
}
