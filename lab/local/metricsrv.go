package local

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab"
)

// connDrainTimeout bounds how long perflab waits, after a trial's command
// exits, for metric connections it left open (a leftover child holding the
// socket).
const connDrainTimeout = 2 * time.Second

// metricServer is the loopback listener whose address trials get in
// PERFLAB_METRICS_ADDR. Lines arriving on connections accepted during a
// trial belong to that trial.
type metricServer struct {
	ln *net.TCPListener
}

func newMetricServer() (*metricServer, error) {
	ln, err := listenLoopback()
	if err != nil {
		return nil, err
	}
	return &metricServer{ln: ln}, nil
}

func (s *metricServer) addr() string { return s.ln.Addr().String() }

func (s *metricServer) close() { s.ln.Close() }

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
	timer    *time.Timer
	finished bool
	accepted chan struct{} // closed when the accept loop stops; nil if it never started
}

// begin prepares to collect a trial's connections.
func (s *metricServer) begin() *trialConns {
	tc := &trialConns{s: s}
	tc.timer = time.AfterFunc(acceptDelay, tc.startAccepting)
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
		sc := bufio.NewScanner(c)
		sc.Buffer(make([]byte, 4096), 1<<20)
		n := 0
		for sc.Scan() {
			n++
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			m, err := lab.ParseMetricLine(line)
			tc.mu.Lock()
			tc.lines = append(tc.lines, netLine{n: n, m: m, err: err})
			tc.mu.Unlock()
		}
		if err := sc.Err(); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			tc.mu.Lock()
			tc.lines = append(tc.lines, netLine{n: n + 1, err: err})
			tc.mu.Unlock()
		}
	}()
}

// finish stops accepting, takes connections still waiting in the backlog,
// waits for every connection to close (bounded), and returns the lines.
func (tc *trialConns) finish() []netLine {
	tc.timer.Stop()
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
		return nil
	}
	deadline := time.Now().Add(connDrainTimeout)
	for _, c := range tc.conns {
		_ = c.SetReadDeadline(deadline)
	}
	tc.mu.Unlock()
	tc.readers.Wait()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.lines
}

// sweep accepts, without blocking, connections the command made before it
// exited that the accept loop had not picked up yet.
func (tc *trialConns) sweep() {
	rc, err := tc.s.ln.SyscallConn()
	if err != nil {
		return
	}
	// Control, not Read: a listener's RawConn refuses Read. The socket is
	// non-blocking and no Accept is running now, so this cannot block.
	var fds []int
	_ = rc.Control(func(fd uintptr) {
		for {
			nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK)
			if err != nil {
				return
			}
			fds = append(fds, nfd)
		}
	})
	for _, nfd := range fds {
		f := os.NewFile(uintptr(nfd), "metrics-conn")
		c, err := net.FileConn(f)
		f.Close()
		if err == nil {
			tc.read(c)
		}
	}
}
