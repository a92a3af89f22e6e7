package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/internal/pgtest"
	"github.com/perflab/perflab/sessions/history"
)

// TestHistoryOnPostgres: the history commands on a real PostgreSQL
// server, named by --history or $PERFLAB_HISTORY: import, alerts (a
// read-only command refuses an empty database rather than create a
// history), copy to a file and back to another database, exports equal;
// the password is never printed.
func TestHistoryOnPostgres(t *testing.T) {
	c, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := context.Background()
	u1, err := c.NewDatabase(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	u2, err := c.NewDatabase(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	run := func(env map[string]string, args ...string) (int, string, string) {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		var out, errb bytes.Buffer
		code := Main(ctx, args, &out, &errb)
		if strings.Contains(out.String()+errb.String(), c.Password) {
			t.Errorf("perflab %v printed the password:\n%s%s", args, out.String(), errb.String())
		}
		return code, out.String(), errb.String()
	}
	if code, _, errs := run(nil, "history", "alerts", "--history", u1); code != exitError || !strings.Contains(errs, "no history there yet") {
		t.Errorf("alerts on an empty database: exit %d %s", code, errs)
	}
	if code, out, errs := run(map[string]string{"PERFLAB_HISTORY": u1}, "history", "import", "cli/testdata/sim-effect.jsonl"); code != exitOK ||
		!strings.Contains(out+errs, "postgres://postgres:xxxxx@127.0.0.1") {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	t.Setenv("PERFLAB_HISTORY", "")
	file := filepath.Join(t.TempDir(), "copy.db")
	code, out, errs := run(nil, "history", "copy", u1, file)
	if code != exitOK || !strings.Contains(out, "the same on both sides (sha256:") || !strings.Contains(out, "runs 1, results ") {
		t.Fatalf("copy to a file: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(nil, "history", "copy", file, u2); code != exitOK {
		t.Fatalf("copy back: exit %d\n%s%s", code, out, errs)
	}
	_, e1, _ := run(nil, "history", "export", "--json", "--history", u1)
	_, e2, _ := run(nil, "history", "export", "--json", "--history", u2)
	_, e3, _ := run(nil, "history", "export", "--json", "--history", file)
	strip := func(s string) string { // the export names its history
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, `"history"`) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if e1 == "" || strip(e1) != strip(e2) || strip(e1) != strip(e3) {
		t.Errorf("exports differ:\n%s\n%s\n%s", e1, e2, e3)
	}
	if code, _, errs := run(nil, "history", "copy", file, u2); code != exitError || !strings.Contains(errs, "only into an empty history") {
		t.Errorf("copy into a history with rows: exit %d %s", code, errs)
	}
}

// TestTeamOnOneServer is issue 37's lab: four processes as four hosts
// (each its own data folder, so no host lock is shared) write to one
// PostgreSQL history at once: two watch the same phone model (Pixel 3)
// over one repository, one watches another phone (Pixel 4), one imports
// sessions. Every commit is measured once per phone model, none twice,
// nothing is lost, and the dashboard's queries see it all.
func TestTeamOnOneServer(t *testing.T) {
	bin, err := perflabBinary()
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := context.Background()
	u, err := c.NewDatabase(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"example", "watch-repo", repo, "--commits", "6", "--step-at", "0"}, &out, &errb); code != exitOK {
		t.Fatalf("watch-repo: %s", errb.String())
	}
	type host struct {
		args []string
		out  bytes.Buffer
		cmd  *osexec.Cmd
	}
	hosts := []*host{
		{args: []string{"watch", "example:sim-watch", "--git", repo, "--since", "base", "--once", "--device", "sim:pixel"}},
		{args: []string{"watch", "example:sim-watch", "--git", repo, "--since", "base", "--once", "--device", "sim:pixel"}},
		{args: []string{"watch", "example:sim-watch", "--git", repo, "--since", "base", "--once", "--device", "sim:pixel4"}},
		{args: []string{"history", "import", "cli/testdata/sim-effect.jsonl"}},
	}
	for i, h := range hosts {
		home := filepath.Join(dir, fmt.Sprintf("host%d", i))
		h.cmd = osexec.Command(bin, h.args...)
		h.cmd.Env = append(os.Environ(), "PERFLAB_HISTORY="+u, "XDG_DATA_HOME="+home, "XDG_CACHE_HOME="+home, "XDG_STATE_HOME="+home, "XDG_CONFIG_HOME="+home)
		h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.out
		if err := h.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hosts {
		if err := h.cmd.Wait(); err != nil && h.cmd.ProcessState.ExitCode() != exitRegression {
			t.Errorf("perflab %v: %v\n%s", h.args, err, h.out.String())
		}
	}
	db, err := history.OpenExisting(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Results(ctx)
	if err != nil {
		t.Fatal(err)
	}
	measured := map[string]int{} // device/commit → watch rows of it
	imported := 0
	for _, r := range rows {
		switch {
		case r.Kind == history.KindWatch && r.Control != "":
			measured[r.Device+"/"+r.Rev]++
		case r.Run == "session:20261123-112315-8c11b4":
			imported++
		}
	}
	perDevice := map[string]int{}
	for k, n := range measured {
		if n != 1 {
			t.Errorf("%s measured %d times", k, n)
		}
		perDevice[strings.Split(k, "/")[0]]++
	}
	if perDevice["Pixel 3"] != 6 || perDevice["Pixel 4"] != 6 || imported == 0 {
		t.Errorf("commits measured per device %v, imported rows %d; want 6 each and the import", perDevice, imported)
	}
	left := hosts[0].out.String() + hosts[1].out.String()
	t.Logf("the two Pixel 3 watches: %d commits left to the other", strings.Count(left, "another watch is measuring it"))
}
