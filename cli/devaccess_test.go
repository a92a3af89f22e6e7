package cli

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/sshtunnel"
)

// TestDeviceAccessFlags: every command that reaches devices takes --adb and
// --ssh through deviceAccess: the same help text, the same check of each
// value as it is parsed (exit 2), and the same failure to reach the --ssh
// hosts (exit 1, "PREFIX: ERROR" on stderr). Nothing here reaches the
// network: "me@lab7" with no adb server on lab7 fails before any dial.
func TestDeviceAccessFlags(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("SSH_AUTH_SOCK", "")
	dir := t.TempDir()
	cmds := []struct {
		name   string
		args   []string // the command with what it needs to reach its devices
		help   []string // nil: the command's --help is another row's
		prefix string   // of its error messages
	}{
		{"run --headless", []string{"run", "examples/sim-controls-on.json", "--headless", "--quiet", "--out", filepath.Join(dir, "s.jsonl")}, []string{"run", "--help"}, "perflab run"},
		{"run (workbench)", []string{"run", "examples/sim-controls-on.json"}, nil, "perflab run"},
		{"workbench", nil, []string{"--realtime", "--help"}, "perflab"},
		{"bisect", []string{"bisect", "examples/sim-bisect.json", "--headless", "--quiet", "--dir", dir}, []string{"bisect", "--help"}, "perflab bisect"},
		{"devices", []string{"devices"}, []string{"devices", "--help"}, "perflab devices"},
		{"check", []string{"check", "sim:pixel"}, []string{"check", "--help"}, "perflab check"},
		{"tune", []string{"tune", "sim:pixel"}, []string{"tune", "--help"}, "perflab tune"},
		{"validate", []string{"validate", "--experiment", "examples/sim-controls-on.json"}, []string{"validate", "--help"}, "perflab validate"},
		{"order", []string{"order", "--experiment", "examples/sim-controls-on.json"}, []string{"order", "--help"}, "perflab order"},
	}
	run := func(args []string) (int, string) {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), args, &out, &errb)
		return code, out.String() + errb.String()
	}

	// The help of both flags, as deviceAccess registers them.
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var acc deviceAccess
	acc.register(fs)
	var want bytes.Buffer
	fs.SetOutput(&want)
	fs.PrintDefaults()
	if !strings.Contains(want.String(), "-adb HOST:PORT") || !strings.Contains(want.String(), "-ssh [USER@]HOST[:PORT]") {
		t.Fatalf("deviceAccess registers:\n%s", want.String())
	}

	_, badADB := adb.ParseServer("lab7:x:y")
	_, badSSH := sshtunnel.ParseTarget("me@")
	unreachable := ": --ssh me@lab7: no adb server on lab7 (add --adb lab7:5037, the adb server's port on that host)\n"
	for _, c := range cmds {
		t.Run(c.name, func(t *testing.T) {
			if c.help != nil {
				code, out := run(c.help)
				if code != exitOK {
					t.Errorf("%v: exit %d", c.help, code)
				}
				lines := strings.Split(strings.TrimSuffix(want.String(), "\n"), "\n")
				for i := 0; i+1 < len(lines); i += 2 {
					if flagHelp := lines[i] + "\n" + lines[i+1] + "\n"; !strings.Contains(out, flagHelp) {
						t.Errorf("%v: help lacks\n%sgot:\n%s", c.help, flagHelp, out)
					}
				}
			}
			for _, bad := range []struct {
				args []string
				want string
			}{
				{[]string{"--adb", "lab7:x:y"}, `invalid value "lab7:x:y" for flag -adb: ` + badADB.Error() + "\n"},
				{[]string{"--ssh", "me@"}, `invalid value "me@" for flag -ssh: ` + badSSH.Error() + "\n"},
			} {
				args := append(append([]string(nil), c.args...), bad.args...)
				if code, out := run(args); code != exitUsage || !strings.Contains(out, bad.want) {
					t.Errorf("%v: exit %d, output\n%s\nwant exit %d and %q", args, code, out, exitUsage, bad.want)
				}
			}
			args := append(append([]string(nil), c.args...), "--adb", "127.0.0.1:5999", "--ssh", "me@lab7")
			if code, out := run(args); code != exitError || !strings.HasSuffix(out, "\n"+c.prefix+unreachable) && out != c.prefix+unreachable {
				t.Errorf("%v: exit %d, output\n%s\nwant exit %d ending in %q", args, code, out, exitError, c.prefix+unreachable)
			}
		})
	}
}
