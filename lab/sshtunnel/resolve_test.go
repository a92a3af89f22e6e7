package sshtunnel_test

import (
	"context"
	"io"
	"net"
	"os"
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
	cfg, err := os.ReadFile(l.Config)
	if err != nil {
		t.Fatal(err)
	}
	far := string(cfg[strings.Index(string(cfg), "Host far"):])
	far = far[:strings.Index(far, "\n\n")]
	jump := strings.Replace(far, "Host far", "Host far-via-near", 1) + "\n  ProxyJump near\n"
	if err := os.WriteFile(l.Config, append(cfg, []byte(jump)...), 0o600); err != nil {
		t.Fatal(err)
	}
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
	// A host whose key is not the file's: the tunnel refuses it, naming it.
	other := strings.Replace(string(cfg), "UserKnownHostsFile ", "UserKnownHostsFile /dev/null ", -1)
	bad := l.Dir + "/ssh_config_bad"
	os.WriteFile(bad, []byte(strings.ReplaceAll(other, "UserKnownHostsFile /dev/null "+l.Dir+"/known_hosts", "UserKnownHostsFile /dev/null")), 0o600)
	target, _ := sshtunnel.ParseTarget("near")
	c, err := sshtunnel.Resolve(ctx, target, bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sshtunnel.Dial(ctx, c); err == nil || !strings.Contains(err.Error(), "ssh near (") || !strings.Contains(err.Error(), "run `ssh near` once") {
		t.Errorf("a host key not in known_hosts: %v", err)
	}
}
