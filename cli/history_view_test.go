package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/perflab/perflab/analysis/changepoint"
)

// TestHistorySeriesForView: the history screen's series are the
// history's, each with the steps history changepoints lists.
func TestHistorySeriesForView(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"history", "import", "--history", db, "--csv", "examples/history.csv"}, &out, &errb); code != exitOK {
		t.Fatalf("import: %d %s", code, errb.String())
	}
	out.Reset()
	if code := dispatch(context.Background(), []string{"history", "changepoints", "--history", db, "--json"}, &out, &errb); code != exitOK {
		t.Fatalf("changepoints: %d %s", code, errb.String())
	}
	series, err := historySeries(context.Background(), &historyOpts{file: db, minSegment: changepoint.DefaultMinSegment, alpha: changepoint.DefaultAlpha})
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, s := range series {
		if len(s.Builds) != len(s.Values) || len(s.Values) == 0 {
			t.Errorf("%s/%s: %d builds, %d values", s.Device, s.Metric, len(s.Builds), len(s.Values))
		}
		steps += len(s.Steps)
	}
	if len(series) == 0 || steps == 0 || !bytes.Contains(out.Bytes(), []byte(`"index"`)) {
		t.Errorf("%d series, %d steps; changepoints said %s", len(series), steps, out.String())
	}
	if code := dispatch(context.Background(), []string{"history", "view", "--history", db, "extra"}, &out, &errb); code != exitUsage {
		t.Errorf("view with a file: exit %d", code)
	}
}
