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

// trialConns collects the connections of one trial.
type trialConns struct {
	s        *metricServer
	mu       sync.Mutex
	lines    []netLine
	readers  sync.WaitGroup
	accepted chan struct{}
	conns    []net.Conn
}

// begin starts accepting connections for a trial.
func (s *metricServer) begin() *trialConns {
	tc := &trialConns{s: s, accepted: make(chan struct{})}
	_ = s.ln.SetDeadline(time.Time{})
	go func() {
		defer close(tc.accepted)
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return // deadline set by finish, or listener closed
			}
			tc.read(c)
		}
	}()
	return tc
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
	_ = tc.s.ln.SetDeadline(time.Unix(1, 0))
	<-tc.accepted
	_ = tc.s.ln.SetDeadline(time.Time{})
	tc.sweep()
	deadline := time.Now().Add(connDrainTimeout)
	tc.mu.Lock()
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
	var fds []int
	_ = rc.Read(func(fd uintptr) bool {
		for {
			nfd, _, err := syscall.Accept4(int(fd), syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK)
			if err != nil {
				return true
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
