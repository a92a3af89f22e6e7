package page

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// load is the CLI's sample session (a 5% slower build on the simulated
// phone) with its analysis, as perflab report makes it.
func load(t *testing.T) Input {
	t.Helper()
	s, err := sessions.Load(filepath.Join("..", "..", "cli", "testdata", "sim-effect.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	plan := &s.Header.Plan
	a := engine.Analyse(plan, sessions.ArmInputs(s.Events, len(plan.ArmKeys())), engine.Options(plan))
	return Input{Session: s, Reports: a.Reports()}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", name, got)
	}
}

// TestMarkdown: the answer first, the changed metric first in the
// table, the verdicts as analysis gave them.
func TestMarkdown(t *testing.T) {
	in := load(t)
	var b bytes.Buffer
	if err := Markdown(&b, in); err != nil {
		t.Fatal(err)
	}
	golden(t, "sim-effect.md", b.String())
	var changed []string
	for _, m := range in.Reports[0].Metrics {
		if m.Verdict == analysis.VerdictRegression || m.Verdict == analysis.VerdictImprovement {
			changed = append(changed, m.Name)
		}
	}
	if len(changed) == 0 {
		t.Fatal("the sample session has no changed metric")
	}
	table := b.String()[strings.Index(b.String(), "|---"):]
	first := strings.Split(table, "\n")[1]
	if !strings.Contains(first, strings.ReplaceAll(changed[0], "_", `\_`)) || !strings.Contains(first, "**") {
		t.Errorf("first row %q, want the changed %s in bold", first, changed[0])
	}
}

// TestHTML: one self-contained page (no script, no link to a file
// beside it), the summary, the table with a class per verdict, the plot
// inline, and text escaped.
func TestHTML(t *testing.T) {
	in := load(t)
	in.Plot = []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>`)
	in.Lines = []string{`order effect <b>none</b>`}
	var b bytes.Buffer
	if err := HTML(&b, in); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<!DOCTYPE html>", "<p class=\"summary\">1 of 1 metric changed; 1 regression: startup_ms &#43;3.40%", `class="regression"`,
		`<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>`, "order effect &lt;b&gt;none&lt;/b&gt;", "session " + in.Session.Header.ID} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q in the page", want)
		}
	}
	for _, bad := range []string{"<script", "<?xml", `src="`, `href="`} {
		if strings.Contains(page, bad) {
			t.Errorf("%q in a self-contained page", bad)
		}
	}
}

// TestMarkdownCell: cell text cannot break the table or become markup.
func TestMarkdownCell(t *testing.T) {
	for in, want := range map[string]string{
		"a|b":       `a\|b`,
		"x_y*z":     `x\_y\*z`,
		"<script>":  "&lt;script&gt;",
		"two\nline": "two line",
	} {
		if got := format.MarkdownCell(in); got != want {
			t.Errorf("format.MarkdownCell(%q) = %q, want %q", in, got, want)
		}
	}
}
