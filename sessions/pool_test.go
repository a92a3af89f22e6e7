package sessions

import (
	"reflect"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis"
)

func TestPairPoolRounds(t *testing.T) {
	// Two devices (1, 2) interleave rounds 0..5: round 3 broke (two A),
	// round 4 is device 1's latest with one value (pending), round 5 is
	// device 2's latest and complete; round 1's lone value is not its
	// device's latest: dropped.
	av := []float64{10, 20, 30, 31, 40, 11}
	ar := []int32{0, 2, 3, 3, 4, 1}
	ad := []uint16{1, 2, 1, 1, 1, 2}
	bv := []float64{12, 22, 55}
	br := []int32{2, 0, 5}
	bd := []uint16{2, 1, 2}
	av = append(av, 50)
	ar = append(ar, 5)
	ad = append(ad, 2)
	pairs, strata, dropped := pairPoolRounds(av, bv, ar, br, ad, bd)
	want := []analysis.Pair{{A: 10, B: 22}, {A: 20, B: 12}, {A: 50, B: 55}}
	if !reflect.DeepEqual(pairs, want) || !reflect.DeepEqual(strata, []uint16{1, 2, 2}) || dropped != 2 {
		t.Errorf("pairs %v strata %v dropped %d", pairs, strata, dropped)
	}
}

// A session written before pools (no "device" on trials, no "devices" in
// the header) reads as before: one device, no strata.
func TestOldSessionHasNoStrata(t *testing.T) {
	const old = `{"format":"perflab-session","version":1,"id":"x","created":"2026-01-01T00:00:00Z","tool":"t","seed":1,"device":{"id":"sim:pixel","backend":"sim","caps":[]},"plan":{"device":"sim:pixel","builds":{},"trials":1,"warmup":0,"order":"random","seed":1,"controls":{}}}
{"type":"trial","t":1,"trial":{"index":0,"round":0,"arm":"control","build":"a","order":"random","status":"ok","duration_s":1,"metrics":[{"name":"m","value":1}]}}
{"type":"trial","t":2,"trial":{"index":1,"round":0,"arm":"treatment","build":"b","order":"random","status":"ok","duration_s":1,"metrics":[{"name":"m","value":2}]}}
`
	s, err := Read(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Header.Devices) != 0 || s.Trials()[0].Device != "" {
		t.Fatalf("devices %v, trial device %q", s.Header.Devices, s.Trials()[0].Device)
	}
	ins := MetricInputs(s.Events)
	if len(ins[0].Pairs) != 1 || ins[0].Strata != nil {
		t.Errorf("pairs %v strata %v", ins[0].Pairs, ins[0].Strata)
	}
}
