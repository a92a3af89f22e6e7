package local

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/perflab/perflab/lab"
)

// connDrainTimeout bounds how long perflab waits, after a trial's command
// exits, for a metric connection that sends nothing more (a leftover child
// holding the socket). It is an idle limit: a connection still delivering
// what the command wrote before it exited keeps being read, up to
// connDrainMax in all, so a loaded host does not lose buffered metrics.
const (
	connDrainTimeout = 2 * time.Second
	connDrainMax     = 60 * time.Second
)

// metricServer is the loopback listener whose address trials get in
// PERFLAB_METRICS_ADDR. A connection whose first line is the trial's
// secret (PERFLAB_METRICS_TOKEN, new for each trial) reports metrics of that
// trial; any other connection (another local user, a leftover of an earlier
// trial) is refused: read up to its first line, then closed.
type metricServer struct {
	ln *net.TCPListener
	fd int // ln's, for the sweep (open until close, under the device's trial lock)

	// One timer serves every trial (see acceptDelay): Reset per trial
	// costs less than a new timer each.
	delay *time.Timer
	mu    sync.Mutex
	cur   *trialConns // the trial under way, for delay's function
}

func newMetricServer() (*metricServer, error) {
	ln, err := listenLoopback()
	if err != nil {
		return nil, err
	}
	rc, err := ln.SyscallConn()
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &metricServer{ln: ln}
	if err := rc.Control(func(fd uintptr) { s.fd = int(fd) }); err != nil {
		ln.Close()
		return nil, err
	}
	s.delay = time.AfterFunc(time.Hour, s.delayed)
	s.delay.Stop()
	return s, nil
}

// delayed starts accepting the connections of the trial under way, once it
// has run for acceptDelay. A call left over from the previous trial (its
// timer fired as that trial ended) may start the next trial's accept loop
// early: harmless, it is only the long trials' way.
func (s *metricServer) delayed() {
	s.mu.Lock()
	tc := s.cur
	s.mu.Unlock()
	if tc != nil {
		tc.startAccepting()
	}
}

func (s *metricServer) addr() string { return s.ln.Addr().String() }

func (s *metricServer) close() {
	s.delay.Stop()
	s.ln.Close()
}

// netLine is one line received over TCP, parsed.
type netLine struct {
	n   int // line number within its connection
	m   lab.Metric
	err error
}

// acceptDelay is how long a trial runs before perflab starts accepting its
// metric connections while it runs. Until then connections wait in the
// listen backlog (the kernel completes them and buffers what the client
// writes), and shorter trials are served after they exit by one
// non-blocking sweep, which spares thousands of millisecond trials a
// goroutine and three deadline changes each.
const acceptDelay = 50 * time.Millisecond

// trialConns collects the connections of one trial.
type trialConns struct {
	s        *metricServer
	mu       sync.Mutex
	lines    []netLine
	readers  sync.WaitGroup
	conns    []net.Conn
	token    string
	refused  int
	finished bool
	drainEnd time.Time     // set by finish: no read goes past it
	accepted chan struct{} // closed when the accept loop stops; nil if it never started
}

// begin prepares to collect a trial's connections.
func (s *metricServer) begin(token string) *trialConns {
	tc := &trialConns{s: s, token: token}
	s.mu.Lock()
	s.cur = tc
	s.mu.Unlock()
	s.delay.Reset(acceptDelay)
	return tc
}

// startAccepting accepts connections while a long trial runs, so a client
// writing more than the socket buffers never blocks.
func (tc *trialConns) startAccepting() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.finished {
		return
	}
	tc.accepted = make(chan struct{})
	_ = tc.s.ln.SetDeadline(time.Time{})
	go func(done chan struct{}) {
		defer close(done)
		for {
			c, err := tc.s.ln.Accept()
			if err != nil {
				return // deadline set by finish, or listener closed
			}
			tc.read(c)
		}
	}(tc.accepted)
}

func (tc *trialConns) read(c net.Conn) {
	tc.mu.Lock()
	tc.conns = append(tc.conns, c)
	tc.mu.Unlock()
	tc.readers.Add(1)
	go func() {
		defer tc.readers.Done()
		defer c.Close()
		lines, ok := readMetricConn(&drainConn{Conn: c, tc: tc}, tc.token)
		tc.mu.Lock()
		tc.lines = append(tc.lines, lines...)
		if !ok {
			tc.refused++
		}
		tc.mu.Unlock()
	}()
}

// drainConn is a metric connection whose read deadline, once the trial's
// command has exited, moves forward after every read that got data.
type drainConn struct {
	net.Conn
	tc *trialConns
}

func (d *drainConn) Read(p []byte) (int, error) {
	n, err := d.Conn.Read(p)
	if n > 0 {
		d.tc.mu.Lock()
		end := d.tc.drainEnd
		d.tc.mu.Unlock()
		if !end.IsZero() {
			next := time.Now().Add(connDrainTimeout)
			if next.After(end) {
				next = end
			}
			_ = d.Conn.SetReadDeadline(next)
		}
	}
	return n, err
}

// readMetricConn reads one connection: the token line, then metric lines
// until end of file. ok is false when the first line is not the token.
func readMetricConn(c net.Conn, token string) (lines []netLine, ok bool) {
	br := bufio.NewReaderSize(c, 4096)
	n := 0
	for {
		line, err := readLine(br, maxMetricLine)
		if err == errLineTooLong {
			if n == 0 {
				return nil, false
			}
			return append(lines, netLine{n: n + 1, err: fmt.Errorf("line longer than %d bytes", maxMetricLine)}), true
		}
		if line != nil || err == nil {
			n++
			s := strings.TrimSpace(string(line))
			switch {
			case n == 1:
				if subtle.ConstantTimeCompare([]byte(s), []byte(token)) != 1 {
					return nil, false
				}
			case s != "":
				m, perr := lab.ParseMetricLine(s)
				lines = append(lines, netLine{n: n, m: m, err: perr})
			}
		}
		if err != nil {
			switch {
			case n == 0:
				return nil, false
			case errors.Is(err, os.ErrDeadlineExceeded):
				lines = append(lines, netLine{n: n + 1, err: fmt.Errorf("connection still open %v after the command exited; lines it sends later are lost", connDrainTimeout)})
			case err != io.EOF:
				lines = append(lines, netLine{n: n + 1, err: err})
			}
			return lines, true
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline, reading at most max
// bytes of it; the last line may lack the newline (then err is io.EOF).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	if err == nil {
		return frag[:len(frag)-1], nil // the common case: no copy
	}
	var line []byte
	for {
		if len(line)+len(frag) > max+1 {
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case err != bufio.ErrBufferFull:
			if len(line) == 0 {
				return nil, err
			}
			return line, err
		}
		frag, err = br.ReadSlice('\n')
	}
}

// finish stops accepting, takes connections still waiting in the backlog,
// waits for every connection to close (bounded), and returns the lines.
func (tc *trialConns) finish() (lines []netLine, refused int) {
	s := tc.s
	s.delay.Stop()
	s.mu.Lock()
	if s.cur == tc {
		s.cur = nil
	}
	s.mu.Unlock()
	tc.mu.Lock()
	tc.finished = true
	accepted := tc.accepted
	tc.mu.Unlock()
	if accepted != nil {
		_ = tc.s.ln.SetDeadline(time.Unix(1, 0))
		<-accepted
		_ = tc.s.ln.SetDeadline(time.Time{})
	}
	tc.sweep()
	tc.mu.Lock()
	if len(tc.conns) == 0 {
		tc.mu.Unlock()
		return nil, 0
	}
	now := time.Now()
	tc.drainEnd = now.Add(connDrainMax)
	for _, c := range tc.conns {
		_ = c.SetReadDeadline(now.Add(connDrainTimeout))
	}
	tc.mu.Unlock()
	tc.readers.Wait()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.lines, tc.refused
}

// pending reports whether the listener may have a connection waiting (or
// cannot tell). poll of a listening TCP socket reads its queue without
// the socket's lock, which accept takes. A zero timeout never blocks, so
// a raw system call serves. The device's trial lock keeps ln open.
func (s *metricServer) pending() bool {
	p := unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN}
	var zero unix.Timespec
	n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	return errno != 0 || n != 0
}

// sweep accepts, without blocking, connections the command made before it
// exited that the accept loop had not picked up yet.
func (tc *trialConns) sweep() {
	if !tc.s.pending() {
		return // the common case, in a poll: a failed accept costs 4 times more
	}
	// The socket is non-blocking and no Accept is running now (finish
	// stopped the accept loop), so this cannot block.
	for {
		nfd, _, err := syscall.Accept4(tc.s.fd, syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK)
		if err != nil {
			return
		}
		f := os.NewFile(uintptr(nfd), "metrics-conn")
		c, err := net.FileConn(f)
		f.Close()
		if err == nil {
			tc.read(c)
		}
	}
}
