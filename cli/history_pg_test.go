package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/internal/pgtest"
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
