package sshtunnel_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/perflab/perflab/lab/sshtunnel"
	"github.com/perflab/perflab/lab/sshtunnel/sshtest"
)

func TestParseTarget(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want sshtunnel.Target
		err  string
	}{
		{"lab7", sshtunnel.Target{Host: "lab7"}, ""},
		{"me@lab7", sshtunnel.Target{User: "me", Host: "lab7"}, ""},
		{"me@lab7:2222", sshtunnel.Target{User: "me", Host: "lab7", Port: 2222}, ""},
		{"[::1]:22", sshtunnel.Target{Host: "::1", Port: 22}, ""},
		{"@lab7", sshtunnel.Target{}, "empty user"},
		{"lab7:x", sshtunnel.Target{}, "bad port"},
		{"lab7:0", sshtunnel.Target{}, "bad port"},
		{"", sshtunnel.Target{}, "want [USER@]HOST[:PORT]"},
		{"me@", sshtunnel.Target{}, "want [USER@]HOST[:PORT]"},
	} {
		got, err := sshtunnel.ParseTarget(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %+v %v, want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %+v %v, want %+v", tt.in, got, err, tt.want)
		}
		if again, err := sshtunnel.ParseTarget(got.String()); err != nil || again != got {
			t.Errorf("%q: String %q parses back as %+v %v", tt.in, got.String(), again, err)
		}
	}
}

// echo serves lines back upper-cased on a free loopback port.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintln(c, strings.ToUpper(sc.Text()))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Minute)) // only catches a hang
	fmt.Fprintln(c, msg)
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != strings.ToUpper(msg)+"\n" {
		t.Errorf("round trip of %q: %q %v", msg, got, err)
	}
}

func TestTunnelDialListenForward(t *testing.T) {
	srv := sshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tun, err := sshtunnel.Dial(ctx, srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	if got, want := tun.String(), "ssh perflab@"+srv.Addr; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
	target := echo(t)

	// ssh -L: dial from the SSH host.
	c, err := tun.DialContext(ctx, "tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "dialled")

	// ssh -L for address-only clients: a loopback address here.
	local, err := tun.Forward(target)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := tun.Forward(target); again != local {
		t.Errorf("Forward twice: %s then %s, want one listener", local, again)
	}
	c, err = net.Dial("tcp", local)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "forwarded")

	// ssh -R: a port the SSH host picks, its connections arriving here.
	ln, err := tun.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if port == 0 {
		t.Fatal("the remote listener has no port")
	}
	go sshtunnel.Relay(ln, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", target)
	})
	c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "reversed")
	if srv.Dials() != 2 || srv.Forwards() != 1 || srv.Relayed() != 1 {
		t.Errorf("server saw %d dials, %d forwards, %d relayed; want 2, 1, 1", srv.Dials(), srv.Forwards(), srv.Relayed())
	}
	tun.Close()
	if _, err := tun.Forward("127.0.0.1:1"); err == nil {
		t.Error("Forward after Close worked")
	}
}

func TestDialRefuses(t *testing.T) {
	srv := sshtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewPublicKey(pub)
	wrongKey := write("wrong_hosts", knownhosts.Line([]string{knownhosts.Normalize(srv.Addr)}, other)+"\n")
	otherHost := write("other_hosts", knownhosts.Line([]string{"elsewhere"}, other)+"\n")
	for _, tt := range []struct {
		name   string
		modify func(*sshtunnel.Config)
		want   string
	}{
		{"changed host key", func(c *sshtunnel.Config) { c.KnownHosts = []string{wrongKey} }, "the host key does NOT match " + wrongKey + ":1"},
		{"unknown host", func(c *sshtunnel.Config) { c.KnownHosts = []string{otherHost} }, "the host key is not in " + otherHost + ": run `ssh perflab@" + srv.Addr + "` once"},
		{"no known_hosts", func(c *sshtunnel.Config) { c.KnownHosts = []string{filepath.Join(dir, "none")} }, "cannot be checked"},
		{"no key", func(c *sshtunnel.Config) { c.Identities = []string{filepath.Join(dir, "none")} }, "no key to log in with"},
		{"key not accepted", func(c *sshtunnel.Config) { c.User = "root" }, "unable to authenticate"},
		{"nothing listening", func(c *sshtunnel.Config) { c.Port = freePort(t) }, "connection refused"},
	} {
		cfg := srv.Config()
		tt.modify(&cfg)
		tun, err := sshtunnel.Dial(ctx, cfg)
		if err == nil {
			tun.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
