package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/perflab/perflab/internal/gittest"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions/engine"
)

// TestWatchLocalBuildStep: on this host each commit is built by the
// experiment's watch.build in its worktree and run by watch.run; a commit
// whose build fails is recorded as such and never tried again.
func TestWatchLocalBuildStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangWait)
	defer cancel()
	r := gittest.New(t)
	r.Commit("base", map[string]string{"app.sh": "exit 0\n"})
	r.Commit("two", map[string]string{"n": "2"})
	r.Commit("broken", map[string]string{"broken": "yes"})
	r.Commit("fixed", map[string]string{"broken": ""})
	path := filepath.Join(t.TempDir(), "w.json")
	doc := `{"device": "local", "order": "random", "seed": 3, "trials": 3, "warmup": 0,
		"watch": {"build": "test -s broken && { echo cannot build >&2; exit 1; }; cp app.sh \"$PERFLAB_OUT\"/", "run": "sh {out}/app.sh"}}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := LoadExperiment(path)
	if err != nil {
		t.Fatal(err)
	}
	local := engine.Lab{Open: func(ctx context.Context, id string, realtime bool) (lab.Device, error) {
		return devices.Open(ctx, id, devices.Options{})
	}}
	db := openDB(t)
	w, err := New(ctx, Config{Repo: r.Dir, Since: "HEAD~3", Loaded: *l, History: db, Lab: local, Dir: t.TempDir(),
		Cache: t.TempDir(), Tool: "test", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	round, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(round.Recorded) != 2 || len(round.Failed) != 1 || round.Failed[0].Subject != "broken" {
		t.Fatalf("recorded %v, failed %v; want two and the broken commit", round.Recorded, round.Failed)
	}
	again, err := w.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Done != 3 || len(again.Recorded)+len(again.Failed) != 0 {
		t.Errorf("second round: done %d, recorded %d, failed %d; want 3 done and nothing tried", again.Done, len(again.Recorded), len(again.Failed))
	}
}
