package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/perflab/perflab/internal/gittest"
)

// shardRepo is a module of two commits with eight benchmarks that report
// a deterministic units/op: B1…B4 change between the commits (+30%,
// −20%, +10%, −50%), S1…S4 do not.
func shardRepo(t *testing.T) string {
	r := gittest.New(t)
	bench := func(units []int) map[string]string {
		var b strings.Builder
		b.WriteString("package shard\n\nimport \"testing\"\n\nvar sink int\n")
		for i, u := range units {
			name := fmt.Sprintf("B%d", i+1)
			if i >= 4 {
				name = fmt.Sprintf("S%d", i-3)
			}
			fmt.Fprintf(&b, "\nfunc Benchmark%s(b *testing.B) {\n\tfor range b.N {\n\t\tsink++\n\t}\n\tb.ReportMetric(%d, \"units/op\")\n}\n", name, u)
		}
		return map[string]string{"go.mod": "module example.com/shard\n\ngo 1.26\n", "shard_test.go": b.String()}
	}
	r.Commit("base", bench([]int{100, 100, 100, 100, 40, 50, 60, 70}))
	r.Commit("head", bench([]int{130, 80, 110, 50, 40, 50, 60, 70}))
	return r.Dir
}

// TestSuiteFourShardsMatchFourWorkers: the suite split 4 ways, the shards
// run side by side as 4 perflab processes and merged, gives the verdicts
// and changes of one run with 4 local workers on the same seed (the
// metric is deterministic); a shard whose run did not finish is named in
// the merged report, which then exits 1.
func TestSuiteFourShardsMatchFourWorkers(t *testing.T) {
	t.Parallel()
	repo := shardRepo(t)
	dir := t.TempDir()
	common := []string{"suite", "--base", "HEAD~1", "--head", "HEAD", "--trials", "8", "--benchtime", "20x", "--quiet", "--seed", "5", "--metrics", "custom"}
	paths := make([]string, 4)
	errs := make([]string, 4)
	var wg sync.WaitGroup
	for k := range 4 {
		paths[k] = filepath.Join(dir, fmt.Sprintf("shard%d.jsonl", k+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, e, code := perflabIn(t, repo, append(common, "--shard", fmt.Sprintf("%d/4", k+1), "--out", paths[k])...)
			if code != exitOK && code != exitRegression {
				errs[k] = fmt.Sprintf("shard %d/4: exit %d\n%s", k+1, code, e)
			}
		}()
	}
	out, e, code := perflabIn(t, repo, append(common, "--workers", "4", "--json")...)
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	if code != exitRegression {
		t.Fatalf("--workers 4: exit %d\n%s", code, e)
	}
	type row struct {
		Verdict string
		Delta   float64
	}
	rows := func(names []string, verdicts []string, deltas []*float64) map[string]row {
		m := map[string]row{}
		for i, n := range names {
			if strings.HasSuffix(n, ":units/op") {
				r := row{Verdict: verdicts[i]}
				if deltas[i] != nil {
					r.Delta = *deltas[i]
				}
				m[n] = r
			}
		}
		return m
	}
	one := decodeReport(t, out)
	var names, verdicts []string
	var deltas []*float64
	for _, m := range one.Metrics {
		names, verdicts, deltas = append(names, m.Name), append(verdicts, m.Verdict), append(deltas, m.DeltaPctMedian)
	}
	want := rows(names, verdicts, deltas)
	merged, e, code := perflabIn(t, repo, append([]string{"merge", "--json"}, paths...)...)
	if code != exitRegression {
		t.Fatalf("merge: exit %d\n%s\n%s", code, merged, e)
	}
	var m struct {
		Metrics []struct {
			Name           string
			Verdict        string
			DeltaPctMedian *float64 `json:"delta_pct_median"`
		}
		Shards []struct{ Shard string }
		Failed []string
	}
	if err := json.Unmarshal([]byte(merged), &m); err != nil {
		t.Fatal(err)
	}
	names, verdicts, deltas = nil, nil, nil
	for _, r := range m.Metrics {
		names, verdicts, deltas = append(names, r.Name), append(verdicts, r.Verdict), append(deltas, r.DeltaPctMedian)
	}
	got := rows(names, verdicts, deltas)
	if len(want) != 8 || fmt.Sprint(got) != fmt.Sprint(want) || len(m.Shards) != 4 || len(m.Failed) != 0 {
		t.Errorf("merged shards: %v (shards %v, failed %v)\none run with 4 workers: %v", got, m.Shards, m.Failed, want)
	}
	for n, d := range map[string]float64{"shard.B1:units/op": 30, "shard.B2:units/op": -20, "shard.B3:units/op": 10, "shard.B4:units/op": -50} {
		if r := want[n]; r.Verdict != map[bool]string{true: "regression", false: "improvement"}[d > 0] || r.Delta < d-0.01 || r.Delta > d+0.01 {
			t.Errorf("%s: %+v, want %+.0f%%", n, r, d)
		}
	}
	// Shard 3's run stopped before its end: the merged report names it.
	data, err := os.ReadFile(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	cut := filepath.Join(dir, "shard3-cut.jsonl")
	if err := os.WriteFile(cut, []byte(strings.Join(lines[:len(lines)-1], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, _, code := perflabIn(t, repo, "merge", paths[0], paths[1], cut, paths[3])
	if code != exitError || !strings.Contains(text, "FAILED: shard 3/4 ("+cut+") failed: its run did not finish") {
		t.Errorf("a shard cut short: exit %d\n%s", code, text)
	}
}
