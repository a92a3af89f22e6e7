package adb

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// adbPeerCheck returns a connection filter that accepts only connections
// opened by the adb server process listening on serverAddr's port: the
// ones `adb reverse` relays from the phone. It tells them apart through
// /proc: the connecting socket's inode (from /proc/net/tcp) must be one of
// the server process's descriptors. It fails when the server process
// cannot be found (another user's adb server, no /proc).
func adbPeerCheck(serverAddr string) (func(net.Conn) error, error) {
	_, p, err := net.SplitHostPort(serverAddr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil, fmt.Errorf("adb server port %q: %v", p, err)
	}
	pc := &peerCheck{port: port}
	if _, err := pc.serverPID(false); err != nil {
		return nil, err
	}
	return pc.allow, nil
}

type peerCheck struct {
	port int
	mu   sync.Mutex
	pid  int
}

// serverPID finds (or, with again, finds anew: the server may have
// restarted) the pid of the process listening on the adb server port.
func (pc *peerCheck) serverPID(again bool) (int, error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.pid != 0 && !again {
		return pc.pid, nil
	}
	socks, err := tcpSockets()
	if err != nil {
		return 0, err
	}
	var inodes []string
	for _, s := range socks {
		if s.listen && s.localPort == pc.port && s.localIP.IsLoopback() || s.listen && s.localPort == pc.port && s.localIP.IsUnspecified() {
			inodes = append(inodes, s.inode)
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no adb server listens on port %d", pc.port)
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		link, err := os.Readlink(fd)
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		for _, ino := range inodes {
			if link == "socket:["+ino+"]" {
				pid, _ := strconv.Atoi(strings.Split(fd, "/")[2])
				pc.pid = pid
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("the adb server on port %d is not a process of this user (cannot tell its connections from others')", pc.port)
}

func (pc *peerCheck) allow(c net.Conn) error {
	ra, ok1 := c.RemoteAddr().(*net.TCPAddr)
	la, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return errors.New("not a TCP connection")
	}
	socks, err := tcpSockets()
	if err != nil {
		return err
	}
	inode := ""
	for _, s := range socks {
		if s.localPort == ra.Port && s.remotePort == la.Port && s.localIP.Equal(ra.IP) && s.remoteIP.Equal(la.IP) {
			inode = s.inode
			break
		}
	}
	if inode == "" {
		return fmt.Errorf("connection from %s: its socket is not this user's or not found", ra)
	}
	for again := false; ; again = true {
		pid, err := pc.serverPID(again)
		if err != nil {
			return err
		}
		if hasSocket(pid, inode) {
			return nil
		}
		if again {
			return fmt.Errorf("connection from %s does not come through adb reverse (only the device under test may use this proxy)", ra)
		}
	}
}

func hasSocket(pid int, inode string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + inode + "]"
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
			return true
		}
	}
	return false
}

type tcpSocket struct {
	localIP, remoteIP     net.IP
	localPort, remotePort int
	listen                bool
	inode                 string
}

// tcpSockets reads /proc/net/tcp and /proc/net/tcp6.
func tcpSockets() ([]tcpSocket, error) {
	var out []tcpSocket
	var firstErr error
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		sc := bufio.NewScanner(file)
		sc.Scan() // header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			lip, lport, ok1 := parseProcAddr(fs[1])
			rip, rport, ok2 := parseProcAddr(fs[2])
			if !ok1 || !ok2 {
				continue
			}
			out = append(out, tcpSocket{localIP: lip, remoteIP: rip, localPort: lport, remotePort: rport, listen: fs[3] == "0A", inode: fs[9]})
		}
		file.Close()
	}
	if out == nil && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// parseProcAddr parses "0100007F:1F90": the address as 32-bit words in
// host (little-endian) order, then the port in hex.
func parseProcAddr(s string) (net.IP, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return nil, 0, false
	}
	b, err := hex.DecodeString(a)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return nil, 0, false
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	return net.IP(b), int(port), true
}
