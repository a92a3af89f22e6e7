package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/examples"
	"github.com/perflab/perflab/lab"
)

// TestExampleSummaries: every shipped example is listed with what it is.
func TestExampleSummaries(t *testing.T) {
	for _, name := range examples.Names() {
		if exampleSummaries[name] == "" {
			t.Errorf("example %s has no summary in exampleSummaries", name)
		}
	}
	for name := range exampleSummaries {
		if _, _, err := examples.Read(name); err != nil {
			t.Errorf("summary of %s, which is not shipped: %v", name, err)
		}
	}
}

// TestExampleCommand: list, print, write (never over a file), the
// watchable repository, and the errors.
func TestExampleCommand(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	want, _, err := examples.Read("sim-profile")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"list", nil, exitOK, "sim:pixel: decodeImage 3% slower, profiled (perflab profile)\n", ""},
		{"print", []string{"sim-profile"}, exitOK, string(want), ""},
		{"print with scheme", []string{"example:sim-profile"}, exitOK, string(want), ""},
		{"write", []string{"sim-profile", "--out", "mine.json"}, exitOK, "wrote mine.json", ""},
		{"not over a file", []string{"sim-profile", "--out", "mine.json"}, exitError, "", "mine.json exists"},
		{"unknown", []string{"nosuch"}, exitError, "", `no example "nosuch" (perflab example lists them)`},
		{"repo", []string{"watch-repo", "w", "--commits", "4", "--step-at", "3"}, exitOK,
			"perflab watch example:sim-watch --git w --since base --once", ""},
		{"repo not empty", []string{"watch-repo", "w"}, exitError, "", "w is not empty"},
		{"repo no dir", []string{"watch-repo"}, exitUsage, "", "want one folder"},
		{"repo bad step", []string{"watch-repo", "x", "--commits", "3", "--step-at", "5"}, exitUsage, "", "want at least 1 commit and a step among them"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), append([]string{"example"}, tt.args...), &out, &errb)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errb.String(), tt.stderr) {
				t.Errorf("exit %d, want %d; stdout %q (want %q), stderr %q (want %q)", code, tt.code, out.String(), tt.stdout, errb.String(), tt.stderr)
			}
		})
	}
	if got, _ := os.ReadFile("mine.json"); !bytes.Equal(got, want) {
		t.Errorf("mine.json is not the example")
	}
	log, err := exec.Command("git", "-C", "w", "log", "--format=%s", "--reverse").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(strings.ReplaceAll(string(log), "\n", "|")); strings.Join(got, " ") != "base|commit 1|commit 2|commit 3: the feed app 2% slower to start|commit 4|" {
		t.Errorf("watch-repo commits %q", log)
	}
	sim, err := exec.Command("git", "-C", "w", "show", "HEAD:perflab-sim.json").Output()
	if err != nil || strings.TrimSpace(string(sim)) != `{"app": "feed", "effect_pct": 2}` {
		t.Errorf("HEAD's perflab-sim.json %q, %v", sim, err)
	}
}

// TestHelpExamplesRunAnywhere runs, from an empty folder, every line of
// the commands' help that names a shipped example (example:NAME), cut to
// a few trials as the docs' examples are (quickArgs): the help's examples
// work outside the source checkout (issue 35).
func TestHelpExamplesRunAnywhere(t *testing.T) {
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range commands() {
		var help bytes.Buffer
		Main(context.Background(), []string{c.name, "--help"}, &help, &help)
		for _, line := range strings.Split(help.String(), "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "perflab ") || !strings.Contains(line, "example:") {
				continue
			}
			if i := strings.Index(line, "  #"); i >= 0 {
				line = line[:i]
			}
			if strings.Contains(line, "&&") || strings.Contains(line, "adb:") || strings.Contains(line, "local") || strings.Contains(line, "--tui") ||
				!strings.Contains(line, "--headless") && (strings.HasPrefix(line, "perflab run ") || strings.HasPrefix(line, "perflab bisect ")) {
				continue // a second command, a phone, or the workbench (interactive)
			}
			args, err := shWords(strings.TrimPrefix(line, "perflab "))
			if err != nil {
				t.Errorf("%s help: %q: %v", c.name, line, err)
				continue
			}
			ran++
			t.Run(strings.Join(args, "_"), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				args := quickArgs(args)
				for i, a := range args {
					if strings.HasPrefix(a, "/tmp/") {
						args[i] = filepath.Join(dir, filepath.Base(a)) // the example's output, here
					}
				}
				cmd := exec.CommandContext(ctx, bin, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, ".data"), "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"),
					"XDG_STATE_HOME="+filepath.Join(dir, ".state"), "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"), "NO_COLOR=1")
				out, _ := cmd.CombinedOutput()
				if code := cmd.ProcessState.ExitCode(); code != 0 && code != 3 {
					t.Errorf("perflab %s: exit %d, want 0 or 3\n%s", strings.Join(args, " "), code, out)
				}
			})
		}
	}
	if ran < 7 {
		t.Errorf("only %d help examples name a shipped example", ran)
	}
}

// TestReadyBuildsOfferWhere: the simulated phone's build picker offers a
// build whose change is in one function, for the where view (issue 35).
func TestReadyBuildsOfferWhere(t *testing.T) {
	found := false
	for _, c := range readyBuilds(lab.DeviceInfo{ID: "sim:pixel", Caps: []string{lab.CapSimTime}}) {
		if e := c.Build.Effect; e != nil && e.Function == "feed.decodeImage" && e.Pct > 0 && c.Build.App == "feed" {
			found = true
		}
	}
	if !found {
		t.Error("no build with a one-function effect")
	}
}
