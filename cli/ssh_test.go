package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/sshtunnel/sshtest"
	"github.com/perflab/perflab/sessions"
)

// TestRunOverSSH runs the sim example (app metrics over adb reverse, the
// record/replay proxy) on a simdevice whose adb server perflab reaches
// with --ssh: keys and known_hosts from the ssh configuration
// (--ssh-config, as ssh -F reads it).
func TestRunOverSSH(t *testing.T) {
	srv := adbtest.StartServer(t)
	addr := startSimdevice(t, srv, "pixel")
	ssh := sshtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	target := ssh.User + "@" + ssh.Addr
	conf := ssh.SSHConfig(t)

	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"devices", "--json", "--adb", srv.Addr, "--ssh", target, "--ssh-config", conf}, &out, &errb); code != 0 {
		t.Fatalf("devices: %d %s", code, errb.String())
	}
	var list []lab.DeviceInfo
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range list {
		if d.ID == "adb:"+addr {
			found = true
			if !strings.Contains(strings.Join(d.Notes, "\n"), "reached through ssh "+target) || !d.Has(lab.CapProxy) {
				t.Errorf("%s: notes %q caps %v, want the tunnel named and the proxy", d.ID, d.Notes, d.Caps)
			}
		}
	}
	if !found {
		t.Fatalf("adb:%s not listed over ssh: %+v", addr, list)
	}

	sess := filepath.Join(t.TempDir(), "s.jsonl")
	out.Reset()
	errb.Reset()
	code := dispatch(context.Background(), []string{"run", "examples/sim-controls-on.json", "--device", "adb:" + addr + "@" + srv.Addr,
		"--adb", srv.Addr, "--ssh", target, "--ssh-config", conf, "--trials", "20", "--headless", "--quiet", "--out", sess}, &out, &errb)
	// 20 of the example's 50 rounds show the tunnel at work; an A/A, so
	// no change or, at 20 rounds, the odd seeded false report (exit 3).
	if code != exitOK && code != exitRegression {
		t.Fatalf("run over ssh: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	s, err := sessions.Load(sess)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, e := range s.Events {
		if e.Type == lab.EventTrial && e.Trial.Counted() {
			ok++
		}
	}
	if ok != 40 || ssh.Relayed() < 40 {
		t.Errorf("%d counted trials (want 40), %d connections relayed back over ssh (want ≥40: each trial's app metrics)", ok, ssh.Relayed())
	}
}

func TestSSHFlagErrors(t *testing.T) {
	ssh := sshtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	conf := ssh.SSHConfig(t)
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"devices", "--ssh", "me@"}, exitUsage, `ssh target "me@"`},
		{[]string{"devices", "--adb", "127.0.0.1:5999", "--ssh", "me@lab7"}, exitError, "--ssh me@lab7: no adb server on lab7 (add --adb lab7:5037"},
		{[]string{"devices", "--adb", "127.0.0.1:5999", "--ssh", "root@" + ssh.Addr, "--ssh-config", conf}, exitError, "unable to authenticate"},
		{[]string{"check", "adb:X", "--adb", "127.0.0.1:5999", "--ssh", "nobody@127.0.0.1:1", "--ssh-config", conf}, 1, "ssh nobody@127.0.0.1:1: dial tcp 127.0.0.1:1"},
		{[]string{"devices", "--adb", "127.0.0.1:5999", "--ssh", "root@" + ssh.Addr, "--ssh-config", "/nonexistent/config"}, exitError, "/nonexistent/config"},
		{[]string{"--adb", "127.0.0.1:5999", "--ssh", "me@lab7"}, 1, "--ssh me@lab7: no adb server on lab7"},
		{[]string{"validate", "--experiment", "examples/sim-controls-on.json", "--adb", "127.0.0.1:5999", "--ssh", "me@lab7"}, exitError, "--ssh me@lab7: no adb server on lab7"},
	} {
		var out, errb bytes.Buffer
		if code := dispatch(context.Background(), tt.args, &out, &errb); code != tt.code || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errb.String(), tt.code, tt.want)
		}
	}
}
