// Package adbtest starts the real things adb integration tests need: a
// Debian adb server on a free loopback port and simulated devices served
// over the adb protocol, each stopped when the test ends.
package adbtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/simdevice"
)

// FreePort returns a free TCP port on 127.0.0.1 outside the ports adb
// treats specially (5037, 5554-5585).
func FreePort(t testing.TB) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if p != 5037 && (p < 5554 || p > 5585) {
			return p
		}
	}
	t.Fatal("no free port")
	return 0
}

// NeedADB skips the test when Debian's adb is not installed (test.sh
// installs it).
func NeedADB(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("adb")
	if err != nil {
		t.Skip("adb not installed (apt-get install adb; ./test.sh does it)")
	}
	return p
}

// Server is an adb server started for a test.
type Server struct {
	Addr string
	Port int
	*adb.Client
}

// StartServer starts `ADB_EMU=0 adb -P PORT start-server` on a free port
// and kills it when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin := NeedADB(t)
	sweepStaleServers()
	env := append(os.Environ(), "ADB_EMU=0", ownerVar+"="+strconv.Itoa(os.Getpid()))
	// A free port can be taken between FreePort and the server's bind
	// (tests of other packages start servers and phones at the same
	// time): adb then meets the other listener ("protocol fault"). A
	// new port is tried, three times at most.
	var port int
	for try := 1; ; try++ {
		port = FreePort(t)
		cmd := exec.Command(bin, "-P", strconv.Itoa(port), "start-server")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil {
			break
		}
		if try == 3 {
			t.Fatalf("adb start-server on %d: %v\n%s", port, err, out)
		}
		t.Logf("adb start-server on %d: %v: %s; trying another port", port, err, bytes.TrimSpace(out))
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port}
	s.Client = adb.NewClient(s.Addr)
	t.Cleanup(func() {
		kill := exec.Command(bin, "-P", strconv.Itoa(port), "kill-server")
		kill.Env = env
		kill.Run()
	})
	return s
}

// ownerVar marks the adb servers StartServer starts with the pid of the test
// binary that started them; the server inherits it from the adb client.
const ownerVar = "PERFLAB_TEST_ADB_OWNER"

// sweepStaleServers kills the adb servers that earlier test binaries left
// behind: a binary killed by go test's -timeout runs no t.Cleanup, and its
// daemonized server would live on. Only processes carrying ownerVar whose
// owner is gone are touched; adb servers of anyone else never carry it.
func sweepStaleServers() {
	dirs, _ := os.ReadDir("/proc")
	marker := []byte(ownerVar + "=")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if !bytes.HasPrefix(kv, marker) {
				continue
			}
			owner, err := strconv.Atoi(string(kv[len(marker):]))
			if err == nil && owner != os.Getpid() && syscall.Kill(owner, 0) == syscall.ESRCH {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			break
		}
	}
}

// Sim is a simulated device served on a loopback port.
type Sim struct {
	*simdevice.Sim
	Addr   string // HOST:PORT, also the adb serial
	cancel context.CancelFunc
	done   chan error
}

// StartSim serves a simulated phone on addr ("" for a free port) and
// stops it when the test ends.
func StartSim(t testing.TB, addr string, opt simdevice.Options) *Sim {
	t.Helper()
	if opt.Logf == nil {
		opt.Logf = func(f string, a ...any) {
			if testing.Verbose() {
				t.Logf(f, a...)
			}
		}
	}
	s, err := simdevice.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	if addr == "" {
		addr = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	}
	a, err := s.Server.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sim := &Sim{Sim: s, Addr: a.String(), cancel: cancel, done: make(chan error, 1)}
	go func() { sim.done <- s.Server.Serve(ctx) }()
	t.Cleanup(sim.Stop)
	return sim
}

// Stop stops serving (the adb server then lists the device offline), as
// a phone that loses power: its connections drop first, so that no
// command in flight reports an exit status. (Cancelling first let a
// command interrupted by the cancel report exit 130 before the drop, and
// a trial then failed as a failed command, not as a lost device.)
func (s *Sim) Stop() {
	s.Server.Close()
	s.cancel()
}

// Connect asks server to connect to the sim and waits until it is listed
// in state want ("device", or "unauthorized").
func Connect(t testing.TB, server *Server, addr, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := server.Connect(ctx, addr); err != nil && !(want == "unauthorized" && strings.Contains(err.Error(), "failed to authenticate")) {
		t.Fatal(err)
	}
	WaitState(t, server, addr, want, time.Minute)
}

// WaitState waits until serial is listed by server in state want ("" for
// not listed at all).
func WaitState(t testing.TB, server *Server, serial, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := "not listed"
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		es, err := server.Devices(ctx)
		cancel()
		if err == nil {
			state := ""
			for _, e := range es {
				if e.Serial == serial {
					state = e.State
				}
			}
			if state == want {
				return
			}
			last = state
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("device %s on %s: state %q after %v, want %q", serial, server.Addr, last, timeout, strings.TrimSpace(want))
}
