package sessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/perflab/perflab/lab"
)

var fastSamples = []string{
	`{"type":"trial","t":0.25,"trial":{"index":3,"round":1,"arm":"treatment","build":"b","order":"random","status":"ok","duration_s":0.01,"metrics":[{"name":"wall_ms","value":12.5,"unit":"ms","better":"lower"}]}}`,
	`{"type":"trial","t":1e-3,"trial":{"index":0,"round":0,"arm":"control","build":"a","warmup":true,"order":"fixed","status":"failed","reason":"exit status 1","duration_s":0,"metrics":[]}}`,
	`{"type":"trial","t":7,"trial":{"index":1,"round":0,"arm":"control","build":"a","warmup":false,"device":"pixel-1","order":"random","status":"ok","reason":"r","duration_s":1,"metrics":[{"name":"a","value":1},{"name":"b","value":2,"better":"higher"},{"name":"c","value":3,"unit":"s"}]}}`,
	`{"type":"trial","t":7,"trial":{"index":1,"round":0,"arm":"control","build":"a","order":"random","status":"ok","duration_s":1,"metrics":[{"name":"a","value":1}]},"type":"note"}`,          // a second type
	`{"type":"trial","t":7,"trial":{"index":1,"round":0,"arm":"control","build":"a","order":"random","status":"ok","duration_s":1,"metrics":[{"name":"a","value":1,"unit":"s","unit":"ms"}]}}`, // repeated key
	`{"type":"trial","t":7,"trial":{"index":1,"round":0,"arm":"control","build":"a","order":"random","status":"ok","duration_s":1,"metrics":null}}`,
	` { "trial" : { "metrics" : [ { "value" : -0.5E+2 , "name" : "x" } , {"name":"y","value":0} ] , "arm" : "control" } , "type" : "trial" , "t" : 3 } `,
	`{"type":"trial","t":2,"trial":{"arm":"control","reason":"quote \" inside","metrics":[]}}`, // escape: fallback
	`{"type":"trial","t":2,"trial":{"arm":"control","index":1.5}}`,                         // fraction for int
	`{"type":"trial","t":2,"trial":{"arm":"control","reason":null}}`,                       // null
	`{"type":"trial","t":2,"trial":{"arm":"control","extra":1}}`,                           // unknown key
	`{"Type":"trial","t":2,"trial":{"arm":"control"}}`,                                     // case-insensitive key
	`{"type":"note","t":2,"note":{"text":"hi"}}`,                                           // other event
	`{"type":"trial","t":01,"trial":{"arm":"control"}}`,                                    // bad number
	`{"type":"trial","t":2,"trial":{"arm":"control"}} x`,                                   // trailing data
	`{"type":"trial","t":2,"trial":{"arm":"contrôl"}}`,                                     // non-ASCII
	`{"type":"trial","t":1e999,"trial":{"arm":"control"}}`,                                 // out of range
	`{"type":"trial","t":2,"trial":{"arm":"control","metrics":[{"name":"a","value":1},]}}`, // trailing comma

	`{"type":"trial","t":7,"trial":{"index":1,"round":0,"arm":"control","build":"a","order":"random","status":"ok","duration_s":1,"metrics":[],"host":{"other_cpus":-0.125,"load1":2.07,"cpus":2}}}`,
	`{"type":"trial","t":7,"trial":{"host":{"cpus":2,"load1":1},"host":{"other_cpus":0.5},"arm":"control"}}`, // repeated host: one object, filled twice
	`{"type":"trial","t":7,"trial":{"arm":"control","host":null}}`,                                           // null host
	`{"type":"trial","t":7,"trial":{"arm":"control","host":{"other_cpus":1,"busy":true}}}`,                   // unknown host key
	`{"type":"trial","t":7,"trial":{"arm":"control","host":{"cpus":2.5}}}`,                                   // fraction for cpus
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
	if accepted != 7 {
		t.Errorf("fast path accepted %d sample lines, want the 7 plain ones", accepted)
	}
}

// checkFast decodes line with decodeTrialFast and with each of the
// decoders it tries, and fails when one accepts the line and decodes
// anything but what encoding/json decodes. It reports whether
// decodeTrialFast accepted the line.
func checkFast(t *testing.T, line []byte) bool {
	t.Helper()
	var std lab.Event
	stdErr := json.Unmarshal(line, &std)
	accepted := false
	for _, d := range []struct {
		name   string
		decode func([]byte, *lab.Event, *interner) bool
	}{{"decodeTrialFast", decodeTrialFast}, {"decodeTrialLayout", decodeTrialLayout}, {"decodeTrialObject", decodeTrialObject}} {
		var fast lab.Event
		var in interner
		if !d.decode(line, &fast, &in) {
			if len(in.trials) != 0 {
				t.Fatalf("%s refused %q but kept its trial", d.name, line)
			}
			continue
		}
		accepted = accepted || d.name == "decodeTrialFast"
		if stdErr != nil {
			t.Fatalf("%s accepted %q, encoding/json rejects it: %v", d.name, line, stdErr)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("%s %q:\nfast %+v %+v\nstd  %+v %+v", d.name, line, fast, fast.Trial, std, std.Trial)
		}
	}
	return accepted
}

// TestDecodeTrialLayoutCoversEveryField: a trial event whose Trial and
// metrics have every field set, as the writer encodes it, is decoded by
// decodeTrialLayout (not left to the slower decoders) into what was
// written. A field added to lab.Trial or lab.Metric fails here until the
// layout decoder knows it.
func TestDecodeTrialLayoutCoversEveryField(t *testing.T) {
	tr := &lab.Trial{}
	fillNonZero(reflect.ValueOf(tr).Elem())
	e := lab.Event{Type: lab.EventTrial, T: 1.5, Trial: tr}
	line, ok := appendTrialEvent(nil, e)
	if !ok {
		t.Fatal("appendTrialEvent refused the trial")
	}
	var got lab.Event
	var in interner
	if !decodeTrialLayout(line, &got, &in) {
		t.Fatalf("decodeTrialLayout refused %s", line)
	}
	if !reflect.DeepEqual(got, e) {
		t.Errorf("decodeTrialLayout %s:\n got %+v %+v\nwant %+v %+v", line, got, *got.Trial, e, *e.Trial)
	}
	checkFast(t, line)
}

// FuzzTrialLayoutRoundTrip encodes a trial event as the writer does and
// decodes it: every decoder that accepts the line must give what
// encoding/json gives, and decodeTrialLayout must accept every line whose
// strings need no escapes and whose numbers it reads (the writer's usual
// line).
func FuzzTrialLayoutRoundTrip(f *testing.F) {
	f.Add(12.5, 0.004, 4.8, 3, 1, "treatment", "b.apk", "", "alternate", "ok", "", "wall_ms", "ms", "lower", false, 1)
	f.Add(0.0, 1e-7, 1e21, 0, 0, "control", "a", "pixel", "fixed", "failed", "exit status 1", "x", "", "", true, 0)
	f.Add(math.Copysign(0, -1), -1e-300, 123456789.0, -5, 7, "<&>", "\"\\", "\u2028", "\x00\x7f", "é", "\xff", "\t", "", "higher", false, 3)
	f.Add(1.0, 2.0, 5e-324, 1<<62, -1<<40, "a", "b", "c", "d", "e", "f", "g", "h", "i", true, -1)
	f.Add(1.0, 2.0, 3.0, 1, 1, "a", "b", "", "d", "e", "", "g", "", "i", false, 20)
	f.Fuzz(func(t *testing.T, ts, dur, value float64, index, round int,
		arm, build, device, order, status, reason, name, unit, better string, warmup bool, nmetrics int) {
		e := fuzzTrialEvent(ts, dur, value, index, round, arm, build, device, order, status, reason, name, unit, better, warmup, nmetrics%24)
		line, err := json.Marshal(e)
		if err != nil {
			return // NaN or infinity
		}
		checkFast(t, line)
		plain := func(s string) bool {
			for i := 0; i < len(s); i++ {
				if s[i] >= utf8.RuneSelf || !jsonSafe(s[i]) {
					return false
				}
			}
			return true
		}
		usual := e.Trial.Metrics != nil && abs(index) < 1e17 && abs(round) < 1e17
		for _, s := range []string{arm, build, device, order, status, reason, name, unit, better} {
			usual = usual && plain(s)
		}
		var got lab.Event
		var in interner
		if usual && !decodeTrialLayout(line, &got, &in) {
			t.Fatalf("decodeTrialLayout refused the writer's line %s", line)
		}
	})
}

func abs(n int) int { return max(n, -n) }

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

// checkFloat fails unless fastParser.float reads from b what
// encoding/json's Decoder reads as its first value into a float64: the
// same value bit for bit, the same verdict and the same end.
func checkFloat(t *testing.T, b []byte) {
	t.Helper()
	p := fastParser{b: b}
	got, okGot := p.float()
	dec := json.NewDecoder(bytes.NewReader(b))
	var want float64
	okWant := dec.Decode(&want) == nil
	if okGot != okWant || okGot && (math.Float64bits(got) != math.Float64bits(want) || int64(p.i) != dec.InputOffset()) {
		t.Fatalf("float(%q) = %v, %v, end %d; encoding/json: %v, %v, end %d", b, got, okGot, p.i, want, okWant, dec.InputOffset())
	}
}

// TestFloat: numbers as sessions hold them and the edges of JSON's number
// grammar (19 and 20 digits, leading zeros, a bare point or sign,
// exponents), each followed by what may end it.
func TestFloat(t *testing.T) {
	nums := []string{"0", "-0", "0.0", "-0.000", "1", "-1", "0.1", "9.337797350346866", "0.0000012", "1e-7", "1E5",
		"9007199254740993", "1234567890123456789", "12345678901234567890", "1.234567890123456789", "0.00001234567890123456789",
		"1.2345678901234567890", "00", "01", "-", "", ".5", "1.", "-.5", "1.e5", "1e", "1e+", "18446744073709551615",
		"99999999999999999999", " 12.5", "\t-3", "1e999", "-1e-400", "2.2250738585072014e-308", "4.9e-324"}
	for _, n := range nums {
		for _, end := range []string{"", ",", "}", "]", " ", "5"} {
			checkFloat(t, []byte(n+end))
		}
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for range 100_000 {
		x := math.Exp(rng.NormFloat64()*20) * float64(1-2*rng.IntN(2))
		checkFloat(t, strconv.AppendFloat(nil, x, 'f', -1, 64))
		checkFloat(t, appendJSONFloat(nil, x))
		checkFloat(t, strconv.AppendFloat(nil, x, 'f', rng.IntN(25), 64))
		checkFloat(t, strconv.AppendFloat(nil, math.Float64frombits(rng.Uint64()), 'g', -1, 64))
	}
}

func FuzzFloat(f *testing.F) {
	for _, s := range []string{"0", "-1.5", "9.337797350346866,", "0.0000012]", "1e-7", "12345678901234567890", "01"} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFloat)
}
