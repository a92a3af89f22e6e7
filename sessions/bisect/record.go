package bisect

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/perflab/perflab/analysis"
)

// A bisect's record: saved beside its sessions, loaded back, summarized.

// Save writes the record to path as indented JSON.
func (r *Record) Save(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Load reads a bisect record.
func Load(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q (a file written by perflab bisect)", path, r.Format, Format)
	}
	return &r, nil
}

// Summary is the one-line result of bisect --json.
type Summary struct {
	FirstBad    *BuildRef        `json:"first_bad"`
	DeltaPct    analysis.Float   `json:"delta_pct"`
	CILowPct    analysis.Float   `json:"ci_low_pct"`
	CIHighPct   analysis.Float   `json:"ci_high_pct"`
	Comparisons []ComparisonLine `json:"comparisons"`
	OtherSteps  []Step           `json:"other_steps"`
	TrialsTotal int              `json:"trials_total"`
	Outcome     string           `json:"outcome"`
}

// BuildRef names a build of the range.
type BuildRef struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	Rev   string `json:"rev"`
}

// ComparisonLine is a comparison in the summary.
type ComparisonLine struct {
	A       int    `json:"a"`
	B       int    `json:"b"`
	Verdict string `json:"verdict"`
	Trials  int    `json:"trials"`
}

// Summary returns the one-line result.
func (r *Record) Summary() Summary {
	s := Summary{DeltaPct: analysis.Float(math.NaN()), CILowPct: analysis.Float(math.NaN()), CIHighPct: analysis.Float(math.NaN()),
		Comparisons: []ComparisonLine{}, OtherSteps: r.OtherSteps, TrialsTotal: r.TrialsTotal, Outcome: r.Outcome}
	if s.OtherSteps == nil {
		s.OtherSteps = []Step{}
	}
	if f := r.FirstBad; f != nil {
		s.FirstBad = &BuildRef{Index: f.Index, Name: f.Name, Rev: f.Rev}
		s.DeltaPct, s.CILowPct, s.CIHighPct = f.DeltaPct, f.CILowPct, f.CIHighPct
	}
	for _, c := range r.Comparisons {
		s.Comparisons = append(s.Comparisons, ComparisonLine{A: c.A, B: c.B, Verdict: c.Verdict, Trials: c.Trials})
	}
	return s
}

// IsRecord reports whether the file at path looks like a bisect record
// (its first field names the format), so report and replay can tell one
// from a session.
func IsRecord(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	head := strings.Join(strings.Fields(string(buf[:n])), "")
	return strings.HasPrefix(head, `{"format":"`+Format+`"`)
}
