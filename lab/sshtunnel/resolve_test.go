package sshtunnel_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/lab/sshtunnel"
	"github.com/perflab/perflab/lab/sshworker/sshdtest"
)

// TestResolveAliasAndProxyJump reaches real sshd hosts by aliases of an
// ssh configuration file, as `ssh ALIAS` would: HostName, Port, User,
// IdentityFile and UserKnownHostsFile from the file, and one host through
// the other (ProxyJump); a connection made from the far host arrives.
func TestResolveAliasAndProxyJump(t *testing.T) {
	l := sshdtest.Start(t, []string{"near", "far"}, "")
	l.Alias(t, "far-via-near", "far", "", "  ProxyJump near\n")
	// Something to reach from the far host: an echo listener here.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, alias := range []string{"near", "far-via-near"} {
		t.Run(alias, func(t *testing.T) {
			target, err := sshtunnel.ParseTarget(alias)
			if err != nil {
				t.Fatal(err)
			}
			c, err := sshtunnel.Resolve(ctx, target, l.Config)
			if err != nil {
				t.Fatal(err)
			}
			if c.Host != "127.0.0.1" || c.User == "" || len(c.Identities) == 0 || c.Identities[0] != l.Key || (alias == "far-via-near") != (c.Jump != nil) {
				t.Fatalf("resolved %+v", c)
			}
			tun, err := sshtunnel.Dial(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			defer tun.Close()
			conn, err := tun.DialContext(ctx, "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 5)
			if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping\n" {
				t.Fatalf("echo through %s: %q %v", alias, buf, err)
			}
		})
	}
	// A host whose key is in no known_hosts file: the tunnel refuses it,
	// naming it by its alias.
	bad := filepath.Join(l.Dir, "ssh_config_bad")
	os.WriteFile(bad, []byte(fmt.Sprintf("Host near\n  HostName 127.0.0.1\n  Port %d\n  IdentityFile %s\n  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /dev/null\n", l.Port("near"), l.Key)), 0o600)
	target, _ := sshtunnel.ParseTarget("near")
	c, err := sshtunnel.Resolve(ctx, target, bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sshtunnel.Dial(ctx, c); err == nil || !strings.Contains(err.Error(), "ssh near (") || !strings.Contains(err.Error(), "run `ssh near` once") {
		t.Errorf("a host key not in known_hosts: %v", err)
	}
}
