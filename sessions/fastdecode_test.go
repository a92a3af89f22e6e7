package sessions

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

var fastSamples = []string{
	`{"type":"trial","t":0.25,"trial":{"index":3,"round":1,"arm":"treatment","build":"b","order":"random","status":"ok","duration_s":0.01,"metrics":[{"name":"wall_ms","value":12.5,"unit":"ms","better":"lower"}]}}`,
	`{"type":"trial","t":1e-3,"trial":{"index":0,"round":0,"arm":"control","build":"a","warmup":true,"order":"fixed","status":"failed","reason":"exit status 1","duration_s":0,"metrics":[]}}`,
	` { "trial" : { "metrics" : [ { "value" : -0.5E+2 , "name" : "x" } , {"name":"y","value":0} ] , "arm" : "control" } , "type" : "trial" , "t" : 3 } `,
	`{"type":"trial","t":2,"trial":{"arm":"control","reason":"quote \" inside","metrics":[]}}`, // escape: fallback
	`{"type":"trial","t":2,"trial":{"arm":"control","index":1.5}}`,                             // fraction for int
	`{"type":"trial","t":2,"trial":{"arm":"control","reason":null}}`,                           // null
	`{"type":"trial","t":2,"trial":{"arm":"control","extra":1}}`,                               // unknown key
	`{"Type":"trial","t":2,"trial":{"arm":"control"}}`,                                         // case-insensitive key
	`{"type":"note","t":2,"note":{"text":"hi"}}`,                                               // other event
	`{"type":"trial","t":01,"trial":{"arm":"control"}}`,                                        // bad number
	`{"type":"trial","t":2,"trial":{"arm":"control"}} x`,                                       // trailing data
	`{"type":"trial","t":2,"trial":{"arm":"contrôl"}}`,                                         // non-ASCII
	`{"type":"trial","t":1e999,"trial":{"arm":"control"}}`,                                     // out of range
	`{"type":"trial","t":2,"trial":{"arm":"control","metrics":[{"name":"a","value":1},]}}`,     // trailing comma
}

// TestFastDecodeMatchesEncodingJSON: whenever the fast path accepts a line,
// it must decode exactly what encoding/json decodes.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	accepted := 0
	for _, line := range fastSamples {
		if checkFast(t, []byte(line)) {
			accepted++
		}
	}
	if accepted != 3 {
		t.Errorf("fast path accepted %d sample lines, want the 3 plain ones", accepted)
	}
}

func checkFast(t *testing.T, line []byte) bool {
	t.Helper()
	var fast lab.Event
	var in interner
	if !decodeTrialFast(line, &fast, &in) {
		return false
	}
	var std lab.Event
	if err := json.Unmarshal(line, &std); err != nil {
		t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", line, err)
	}
	if !reflect.DeepEqual(fast, std) {
		t.Fatalf("%q:\nfast %+v %+v\nstd  %+v %+v", line, fast, fast.Trial, std, std.Trial)
	}
	return true
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkFast(t, line) })
}

// BenchmarkLoad100k loads a session of 100,000 trials with three metrics.
func BenchmarkLoad100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.jsonl")
	var sb strings.Builder
	h, _ := json.Marshal(testHeader())
	sb.Write(h)
	sb.WriteByte('\n')
	for i := 0; i < 100000; i++ {
		arm := lab.ArmControl
		if i%2 == 1 {
			arm = lab.ArmTreatment
		}
		fmt.Fprintf(&sb, `{"type":"trial","t":%g,"trial":{"index":%d,"round":%d,"arm":%q,"build":%q,"order":"random","status":"ok","duration_s":0.0101,"metrics":[{"name":"wall_ms","value":%g,"unit":"ms","better":"lower"},{"name":"user_ms","value":%g,"unit":"ms","better":"lower"},{"name":"sys_ms","value":%g,"unit":"ms","better":"lower"}]}}`+"\n",
			float64(i)*0.0101, i, i/2, arm, arm, 10+float64(i%97)/13, 8+float64(i%89)/11, 1+float64(i%83)/7)
	}
	os.WriteFile(path, []byte(sb.String()), 0o644)
	b.SetBytes(int64(sb.Len()))
	for b.Loop() {
		s, err := Load(path)
		if err != nil || len(s.Events) != 100000 {
			b.Fatal(err)
		}
	}
}
