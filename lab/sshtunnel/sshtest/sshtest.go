// Package sshtest runs an in-process SSH server (golang.org/x/crypto/ssh)
// on a free loopback port for tests: public-key login, local forwards
// (direct-tcpip) and remote forwards (tcpip-forward), nothing else. Its
// host key is in a known_hosts file it writes, beside the client key it
// accepts.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/perflab/perflab/lab/sshtunnel"
)

// Server is an SSH server started for a test.
type Server struct {
	Addr string // 127.0.0.1:PORT
	Port int
	User string
	// Home holds .ssh/known_hosts (with this server's key) and
	// .ssh/id_ed25519 (the key it accepts), as ssh expects them in $HOME.
	Home string

	ln       net.Listener
	cfg      *ssh.ServerConfig
	dials    atomic.Int64
	forwards atomic.Int64
	relayed  atomic.Int64

	mu   sync.Mutex
	lns  []net.Listener
	done bool
}

// Start serves on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	_, userPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	userSigner, err := ssh.NewSignerFromKey(userPriv)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{User: "perflab", Home: t.TempDir()}
	allowed := string(userSigner.PublicKey().Marshal())
	s.cfg = &ssh.ServerConfig{
		PublicKeyCallback: func(c ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if c.User() == s.User && string(k.Marshal()) == allowed {
				return nil, nil
			}
			return nil, os.ErrPermission
		},
	}
	s.cfg.AddHostKey(hostSigner)
	s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = s.ln.Addr().String()
	s.Port = s.ln.Addr().(*net.TCPAddr).Port

	dir := filepath.Join(s.Home, ".ssh")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, hostSigner.PublicKey())
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(userPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "id_ed25519"), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	go s.serve()
	t.Cleanup(s.Close)
	return s
}

// Target is the server as an sshtunnel target (user@127.0.0.1:PORT).
func (s *Server) Target() sshtunnel.Target {
	return sshtunnel.Target{User: s.User, Host: "127.0.0.1", Port: s.Port}
}

// Config logs in with the key in Home and checks the host key against
// Home's known_hosts, with no agent.
func (s *Server) Config() sshtunnel.Config {
	dir := filepath.Join(s.Home, ".ssh")
	return sshtunnel.Config{Target: s.Target(), KnownHosts: []string{filepath.Join(dir, "known_hosts")},
		Identities: []string{filepath.Join(dir, "id_ed25519")}}
}

// SSHConfig writes an ssh configuration file (for --ssh-config, ssh -F)
// that logs in to any host with the key in Home and checks host keys
// against Home's known_hosts, as the OpenSSH client reads it (which
// ignores $HOME), and returns its path.
func (s *Server) SSHConfig(t testing.TB) string {
	dir := filepath.Join(s.Home, ".ssh")
	path := filepath.Join(dir, "config")
	cfg := fmt.Sprintf("Host *\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n",
		filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "known_hosts"))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Dials counts the local forwards (direct-tcpip) opened so far.
func (s *Server) Dials() int64 { return s.dials.Load() }

// Forwards counts the remote listeners (tcpip-forward) opened so far.
func (s *Server) Forwards() int64 { return s.forwards.Load() }

// Relayed counts the connections to remote listeners relayed to the client.
func (s *Server) Relayed() int64 { return s.relayed.Load() }

// Close stops the server and every listener it opened.
func (s *Server) Close() {
	s.mu.Lock()
	s.done = true
	lns := s.lns
	s.lns = nil
	s.mu.Unlock()
	s.ln.Close()
	for _, ln := range lns {
		ln.Close()
	}
}

func (s *Server) track(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		ln.Close()
		return false
	}
	s.lns = append(s.lns, ln)
	return true
}

func (s *Server) serve() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.track(connCloser{nc})
		go s.handle(nc)
	}
}

// connCloser adapts a connection so Close tears it down with the listeners.
type connCloser struct{ net.Conn }

func (connCloser) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (c connCloser) Addr() net.Addr          { return c.LocalAddr() }

type forwardReq struct {
	Addr string
	Port uint32
}

type forwardedPayload struct {
	Addr       string
	Port       uint32
	OriginAddr string
	OriginPort uint32
}

type directPayload struct {
	Host       string
	Port       uint32
	OriginAddr string
	OriginPort uint32
}

func (s *Server) handle(nc net.Conn) {
	conn, chans, reqs, err := ssh.NewServerConn(nc, s.cfg)
	if err != nil {
		nc.Close()
		return
	}
	defer conn.Close()
	var mine []net.Listener
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		for _, l := range mine {
			l.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for r := range reqs {
			switch r.Type {
			case "tcpip-forward":
				var m forwardReq
				if err := ssh.Unmarshal(r.Payload, &m); err != nil {
					r.Reply(false, nil)
					continue
				}
				l, err := net.Listen("tcp", net.JoinHostPort(m.Addr, strconv.Itoa(int(m.Port))))
				if err != nil || !s.track(l) {
					r.Reply(false, nil)
					continue
				}
				mu.Lock()
				mine = append(mine, l)
				mu.Unlock()
				s.forwards.Add(1)
				port := uint32(l.Addr().(*net.TCPAddr).Port)
				r.Reply(true, ssh.Marshal(struct{ Port uint32 }{port}))
				go func() {
					for {
						c, err := l.Accept()
						if err != nil {
							return
						}
						ra := c.RemoteAddr().(*net.TCPAddr)
						ch, creqs, err := conn.OpenChannel("forwarded-tcpip", ssh.Marshal(forwardedPayload{m.Addr, port, ra.IP.String(), uint32(ra.Port)}))
						if err != nil {
							c.Close()
							continue
						}
						s.relayed.Add(1)
						go ssh.DiscardRequests(creqs)
						go sshtunnel.Join(c, ch)
					}
				}()
			case "cancel-tcpip-forward":
				r.Reply(true, nil)
			default:
				if r.WantReply {
					r.Reply(false, nil)
				}
			}
		}
	}()
	for nch := range chans {
		if nch.ChannelType() != "direct-tcpip" {
			nch.Reject(ssh.UnknownChannelType, "only port forwarding here")
			continue
		}
		var p directPayload
		if err := ssh.Unmarshal(nch.ExtraData(), &p); err != nil {
			nch.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		c, err := net.Dial("tcp", net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port))))
		if err != nil {
			nch.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			c.Close()
			continue
		}
		s.dials.Add(1)
		go ssh.DiscardRequests(creqs)
		go sshtunnel.Join(c, ch)
	}
}
