package analysis

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// FuzzCompare feeds arbitrary finite samples to Compare: it must not
// panic, its JSON must never hold NaN or Inf, every defined p-value must
// lie in [0, 1] and every verdict must be one of the four.
func FuzzCompare(f *testing.F) {
	f.Add([]byte{}, uint8(3))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x00\x40"), uint8(1))
	f.Add([]byte(strings.Repeat("\x01\x02\x03\x04\x05\x06\x07\x08", 9)), uint8(4))
	f.Add([]byte(strings.Repeat("\xff\xff\xff\xff\xff\xff\xef\x7f", 6)), uint8(2)) // MaxFloat64
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		var xs []float64
		for len(data) >= 8 {
			v := math.Float64frombits(binary.LittleEndian.Uint64(data))
			data = data[8:]
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				xs = append(xs, v)
			}
		}
		k := min(int(split), len(xs))
		in := []MetricInput{{Name: "m", Samples: [][]float64{xs[:k], xs[k:]}}}
		opt := DefaultOptions()
		opt.Resamples = 200
		r := Compare(in, opt)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
			t.Fatalf("non-finite value in JSON: %s", s)
		}
		m := r.Metrics[0]
		for _, p := range []Float{m.Welch.P, m.MannWhitney.P, m.MannWhitney.PAsymptotic, m.KruskalWallis.P,
			m.Trend.A.P, m.Trend.B.P, m.PAdjusted} {
			if p.Defined() && (p < 0 || p > 1) {
				t.Fatalf("p-value %v out of [0, 1]: %s", float64(p), b)
			}
		}
		switch m.Verdict {
		case VerdictRegression, VerdictImprovement, VerdictNoChange, VerdictInconclusive:
		default:
			t.Fatalf("verdict %q", m.Verdict)
		}
		if m.Bootstrap.Low.Defined() && m.Bootstrap.Low > m.Bootstrap.High {
			t.Fatalf("bootstrap low %v > high %v", float64(m.Bootstrap.Low), float64(m.Bootstrap.High))
		}
	})
}
