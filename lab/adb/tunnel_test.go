package adb_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/simdevice"
	"github.com/perflab/perflab/lab/sshtunnel"
	"github.com/perflab/perflab/lab/sshtunnel/sshtest"
)

// TestRemoteServerThroughSSH runs an experiment with app metrics over adb
// reverse and the record/replay proxy, on a phone whose adb server is
// reached only through an SSH tunnel (a real adb server, an in-process SSH
// server): the adb requests go over the tunnel (ssh -L), and the phone's
// reverse connections come back over it (ssh -R), where this host's
// metric listener and proxy take them.
func TestRemoteServerThroughSSH(t *testing.T) {
	srv, sim, origin, hits := proxyRig(t, 8)
	c := ctx(t)
	if _, err := srv.Run(c, sim.Addr, "settings put global "+simdevice.FetchURLSetting+" "+origin.URL+"/feed"); err != nil {
		t.Fatal(err)
	}
	ssh := sshtest.Start(t)
	tun, err := sshtunnel.Dial(c, ssh.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	client := adb.NewClient(srv.Addr)
	client.Tunnel = tun
	raw, err := adb.OpenVia(c, sim.Addr, []*adb.Client{client})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := devices.WithSimExtras(c, raw)
	if err != nil {
		raw.Close()
		t.Fatal(err)
	}
	info := dev.Info()
	if !info.Has(lab.CapProxy) || !strings.Contains(strings.Join(info.Notes, "\n"), "reached through ssh perflab@"+ssh.Addr) {
		t.Errorf("caps %v, notes %q: want the proxy and a note naming the tunnel", info.Caps, info.Notes)
	}
	exp := proxyExperiment("replay", filepath.Join(t.TempDir(), "run.proxy.jsonl"))
	exp.Metrics = []string{"startup_ms", adb.MetricTotalTime}
	ok := 0
	detail := ""
	for _, e := range drain(lab.NewRunner(dev, exp).Run(c), nil) {
		switch {
		case e.Type == lab.EventSettings && e.Settings.Detail["proxy_phone"] != "":
			detail = e.Settings.Detail["proxy_phone"]
		case e.Type == lab.EventTrial && e.Trial.Status == lab.StatusOK:
			ok++
			if len(e.Trial.Metrics) != 2 || e.Trial.Metrics[0].Name != "startup_ms" {
				t.Errorf("trial %d metrics %v, want the app's startup_ms (over the tunnel) and total_time_ms", e.Trial.Index, e.Trial.Metrics)
			}
		case e.Type == lab.EventTrial:
			t.Errorf("trial %d: %s %s", e.Trial.Index, e.Trial.Status, e.Trial.Reason)
		case e.Type == lab.EventEnd && e.End.Reason != "completed":
			t.Errorf("end %+v", e.End)
		}
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if ok != 6 || hits.Load() != 2 {
		t.Errorf("%d ok trials (want 6), origin saw %d requests (want 2: a recording pass per build)", ok, hits.Load())
	}
	if !strings.Contains(detail, "forwarded back over ssh perflab@") {
		t.Errorf("proxy detail %q does not say it goes over the tunnel", detail)
	}
	// Every adb request went over the tunnel, and both the metric
	// listener and the proxy were forwarded back.
	if ssh.Dials() == 0 || ssh.Forwards() < 2 || ssh.Relayed() < 6 {
		t.Errorf("SSH server saw %d dials, %d remote listeners, %d relayed connections; want >0, ≥2, ≥6",
			ssh.Dials(), ssh.Forwards(), ssh.Relayed())
	}
}

// TestRemoteServerWithoutTunnelRefuses: with an adb server on another host
// and no tunnel, what needs adb reverse to this host is refused with an
// error naming the feature, the server and what to do; a local server
// needs nothing.
func TestRemoteServerWithoutTunnelRefuses(t *testing.T) {
	remote := adb.NewClient("192.0.2.7:5037")
	if !remote.Remote() {
		t.Fatal("192.0.2.7:5037 is not remote")
	}
	_, _, err := adb.ExposeLocal(remote, "the record/replay proxy", 4000)
	want := "the record/replay proxy: adb server 192.0.2.7:5037 is on another host, so the phone's connections " +
		"(adb reverse reaches the adb server's host, not this one): pass --ssh USER@192.0.2.7 so perflab forwards them back over SSH, or run perflab on 192.0.2.7"
	if err == nil || err.Error() != want || !errors.Is(err, adb.ErrRemoteReverse) {
		t.Errorf("err %v\nwant %s", err, want)
	}
	for _, addr := range []string{"127.0.0.1:5037", "localhost:5037", "[::1]:5037"} {
		local := adb.NewClient(addr)
		port, undo, err := adb.ExposeLocal(local, "app metrics", 4000)
		if local.Remote() || err != nil || port != 4000 || undo() != nil {
			t.Errorf("%s: remote %v, port %d, err %v: want the local port itself", addr, local.Remote(), port, err)
		}
	}
}

// TestTunnelExposesOnTheRemoteHost: with a tunnel the port the phone is
// given is a listener on the SSH host that reaches this host's port.
func TestTunnelExposesOnTheRemoteHost(t *testing.T) {
	ssh := sshtest.Start(t)
	c := ctx(t)
	tun, err := sshtunnel.Dial(c, ssh.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client := adb.NewClient("lab7:5037")
	client.Tunnel = tun
	port, undo, err := adb.ExposeLocal(client, "app metrics", ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	defer undo()
	if port == ln.Addr().(*net.TCPAddr).Port {
		t.Fatalf("exposed port %d is the local one", port)
	}
	go func() {
		if conn, err := ln.Accept(); err == nil {
			conn.Write([]byte("here"))
			conn.Close()
		}
	}()
	var d net.Dialer
	conn, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "here" {
		t.Errorf("read %q %v through the forwarded port", buf, err)
	}
}
