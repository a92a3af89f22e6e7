package sessions

import (
	"strconv"
	"unsafe"

	"github.com/perflab/perflab/lab"
)

// decodeTrialFast decodes a trial event line as perflab writes it, several
// times faster than the maintained decoders: on the trial lines of the
// 100,000-trial bench session (BenchmarkDecoders100k, one run, one core,
// median of 3) it takes 139 ms, github.com/go-json-experiment/json
// v1.27.2 526 ms (3.8×) and encoding/json 1,226 ms (8.8×), so perflab
// keeps it (encoding/json/v2 needs GOEXPERIMENT=jsonv2 in Go 1.26). It
// handles only the common shape (a "trial" event, strings without escapes,
// known keys, no nulls) and reports false for anything else, which the
// caller then decodes with encoding/json, so the result and the error
// messages are encoding/json's in every other case.
//
// It tries decodeTrialLayout, then decodeTrialObject.
func decodeTrialFast(line []byte, e *lab.Event, in *interner) bool {
	if decodeTrialLayout(line, e, in) {
		return true
	}
	*e = lab.Event{}
	return decodeTrialObject(line, e, in)
}

// decodeTrialObject is decodeTrialFast for a line in any layout: keys in
// any order, spaces anywhere JSON allows them.
func decodeTrialObject(line []byte, e *lab.Event, in *interner) bool {
	p := fastParser{b: line, in: in}
	tr := in.newTrial()
	sawTrial := false
	ok := p.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			s, ok := p.str()
			e.Type = s
			return ok
		case "t":
			v, ok := p.float()
			e.T = v
			return ok
		case "trial":
			sawTrial = true
			return p.trial(tr)
		}
		return false
	})
	if !ok || !sawTrial || e.Type != lab.EventTrial {
		in.dropTrial()
		return false
	}
	p.ws()
	if p.i != len(p.b) {
		in.dropTrial()
		return false
	}
	e.Trial = tr
	return true
}

// decodeTrialLayout decodes a trial event line laid out as perflab (and
// json.Marshal) writes it: the keys in the order of the struct fields,
// omitempty ones only when set, no spaces. It matches each key with its
// separators as one literal instead of scanning and switching on keys,
// which makes it about twice as fast as the general object parser. It
// accepts a subset of what that parser accepts, with the same value
// parsers, and reports false (leaving *e and the trial to be reset) for
// anything else.
func decodeTrialLayout(line []byte, e *lab.Event, in *interner) bool {
	p := fastParser{b: line, in: in}
	tr := in.newTrial()
	e.Type = lab.EventTrial
	ok := p.lit(`{"type":"trial","t":`) && p.floatAt(&e.T) &&
		p.lit(`,"trial":{"index":`) && p.trialHeadLayout(tr) &&
		p.lit(`,"duration_s":`) && p.floatAt(&tr.Duration) &&
		p.lit(`,"metrics":[`) && p.metricsLayout(tr) &&
		(!p.lit(`,"host":{"other_cpus":`) || p.hostLayout(tr)) &&
		(!p.lit(`,"profile":{"file":`) || p.profileLayout(tr)) &&
		(!p.lit(`,"profile_round":true`) || p.set(&tr.ProfileRound)) && p.lit(`}}`)
	if ok {
		p.ws()
		ok = p.i == len(p.b)
	}
	if !ok {
		in.dropTrial()
		return false
	}
	e.Trial = tr
	return true
}

// trialHeadLayout decodes the fields of decodeTrialLayout's trial from
// its index to its status and reason, from after the index's key.
func (p *fastParser) trialHeadLayout(tr *lab.Trial) bool {
	return p.intAt(&tr.Index) &&
		p.lit(`,"round":`) && p.intAt(&tr.Round) &&
		p.lit(`,"arm":`) && p.strAt(&tr.Arm) &&
		p.lit(`,"build":`) && p.strAt(&tr.Build) &&
		(!p.lit(`,"warmup":`) || p.boolAt(&tr.Warmup)) &&
		(!p.lit(`,"device":`) || p.strAt(&tr.Device)) &&
		p.lit(`,"order":`) && p.strAt(&tr.Order) &&
		p.lit(`,"status":`) && p.strAt(&tr.Status) &&
		(!p.lit(`,"reason":`) || p.strAt(&tr.Reason))
}

// metricsLayout decodes the metrics of decodeTrialLayout's line, from
// after the opening bracket.
func (p *fastParser) metricsLayout(t *lab.Trial) bool {
	if p.lit(`]`) {
		t.Metrics = []lab.Metric{}
		return true
	}
	var buf [16]lab.Metric
	ms := buf[:0]
	for {
		var m lab.Metric
		if !(p.lit(`{"name":`) && p.strAt(&m.Name) &&
			p.lit(`,"value":`) && p.floatAt(&m.Value) &&
			(!p.lit(`,"unit":`) || p.strAt(&m.Unit)) &&
			(!p.lit(`,"better":`) || p.strAt(&m.Better)) &&
			p.lit(`}`)) {
			return false
		}
		ms = append(ms, m)
		if p.lit(`,`) {
			continue
		}
		if !p.lit(`]`) {
			return false
		}
		t.Metrics = append(p.in.metricSlab(len(ms)), ms...)
		return true
	}
}

// hostLayout decodes the host object of decodeTrialLayout's line, from
// after its first key.
func (p *fastParser) hostLayout(t *lab.Trial) bool {
	h := p.in.newHost()
	t.Host = h
	return p.floatAt(&h.OtherCPUs) &&
		p.lit(`,"load1":`) && p.floatAt(&h.Load1) &&
		p.lit(`,"cpus":`) && p.intAt(&h.CPUs) && p.lit(`}`)
}

// profileLayout decodes the profile object of decodeTrialLayout's line,
// from after its first key.
func (p *fastParser) profileLayout(t *lab.Trial) bool {
	r := &lab.ProfileRef{}
	t.Profile = r
	return p.strAt(&r.File) &&
		p.lit(`,"sha256":`) && p.strAt(&r.SHA256) &&
		p.lit(`,"samples":`) && p.intAt(&r.Samples) &&
		p.lit(`,"source":`) && p.strAt(&r.Source) &&
		(!p.lit(`,"note":`) || p.strAt(&r.Note)) && p.lit(`}`)
}

// strAt, intAt, floatAt and boolAt read a value into *dst and report
// whether it was one.
func (p *fastParser) strAt(dst *string) (ok bool) {
	*dst, ok = p.str()
	return ok
}

func (p *fastParser) intAt(dst *int) (ok bool) {
	*dst, ok = p.int()
	return ok
}

func (p *fastParser) floatAt(dst *float64) (ok bool) {
	*dst, ok = p.float()
	return ok
}

func (p *fastParser) boolAt(dst *bool) (ok bool) {
	*dst, ok = p.bool()
	return ok
}

// interner shares the few distinct strings of a session (arms, statuses,
// metric names and units) instead of allocating them on every line, and
// hands out trials and metrics from slabs: one allocation per thousand
// trials instead of two per trial.
type interner struct {
	slot    [64]string // direct-mapped by len and first and last byte
	recent  [16]string
	n       int
	m       map[string]string
	trials  []lab.Trial
	metrics []lab.Metric
	hosts   []lab.HostLoad
}

func (in *interner) get(b []byte) string {
	h := 0
	if len(b) > 0 {
		h = (len(b)*7 + int(b[0])*3 + int(b[len(b)-1])) & 63
	}
	if s := in.slot[h]; s == string(b) && (len(s) > 0 || len(b) == 0) {
		return s
	}
	s := in.lookup(b)
	in.slot[h] = s
	return s
}

func (in *interner) lookup(b []byte) string {
	for i := 0; i < in.n; i++ {
		if in.recent[i] == string(b) {
			return in.recent[i]
		}
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	switch {
	case in.n < len(in.recent):
		in.recent[in.n] = s
		in.n++
	case len(in.m) < 4096: // free text (reasons) must not grow it without bound
		if in.m == nil {
			in.m = map[string]string{}
		}
		in.m[s] = s
	}
	return s
}

func (in *interner) newTrial() *lab.Trial {
	if len(in.trials) == cap(in.trials) {
		in.trials = make([]lab.Trial, 0, 1024)
	}
	in.trials = in.trials[:len(in.trials)+1]
	return &in.trials[len(in.trials)-1]
}

// newHost hands out a zero HostLoad from a slab.
func (in *interner) newHost() *lab.HostLoad {
	if len(in.hosts) == cap(in.hosts) {
		in.hosts = make([]lab.HostLoad, 0, 1024)
	}
	in.hosts = in.hosts[:len(in.hosts)+1]
	return &in.hosts[len(in.hosts)-1]
}

// dropTrial returns the last trial handed out (its line was not decoded).
func (in *interner) dropTrial() {
	in.trials[len(in.trials)-1] = lab.Trial{}
	in.trials = in.trials[:len(in.trials)-1]
}

// metricSlab returns an empty slice with room for n metrics.
func (in *interner) metricSlab(n int) []lab.Metric {
	if cap(in.metrics)-len(in.metrics) < n {
		in.metrics = make([]lab.Metric, 0, max(4096, n))
	}
	start := len(in.metrics)
	in.metrics = in.metrics[:start+n]
	return in.metrics[start : start : start+n]
}

type fastParser struct {
	b  []byte
	i  int
	in *interner
}

// byteClass classifies bytes for the scanning loops.
var byteClass = func() (c [256]uint8) {
	for _, b := range []byte{' ', '\t', '\n', '\r'} {
		c[b] |= classSpace
	}
	for b := 0x20; b < 0x80; b++ {
		if b != '"' && b != '\\' {
			c[b] |= classPlain
		}
	}
	return c
}()

const (
	classSpace = 1 << iota // JSON whitespace
	classPlain             // a string byte the fast path copies as is
)

func (p *fastParser) ws() {
	for p.i < len(p.b) && byteClass[p.b[p.i]]&classSpace != 0 {
		p.i++
	}
}

// lit consumes s when the input continues with it (no spaces skipped).
// set sets *b and reports true: a literal's field in a layout.
func (p *fastParser) set(b *bool) bool {
	*b = true
	return true
}

func (p *fastParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

func (p *fastParser) consume(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object parses {"key": value, ...}, calling field for each key with the
// parser positioned at the value.
func (p *fastParser) object(field func(key []byte) bool) bool {
	if !p.consume('{') {
		return false
	}
	if p.consume('}') {
		return true
	}
	for {
		key, ok := p.rawStr()
		if !ok || !p.consume(':') || !field(key) {
			return false
		}
		if p.consume(',') {
			continue
		}
		return p.consume('}')
	}
}

// rawStr returns a string's bytes; strings with escapes or control
// characters are left to encoding/json.
func (p *fastParser) rawStr() ([]byte, bool) {
	if !p.consume('"') {
		return nil, false
	}
	start, b, i := p.i, p.b, p.i
	for i < len(b) && byteClass[b[i]]&classPlain != 0 {
		i++
	}
	if i < len(b) && b[i] == '"' {
		p.i = i + 1
		return b[start:i], true
	}
	return nil, false
}

func (p *fastParser) str() (string, bool) {
	b, ok := p.rawStr()
	if !ok {
		return "", false
	}
	return p.in.get(b), true
}

// number returns the bytes of a number in JSON's grammar.
func (p *fastParser) number() ([]byte, bool) {
	p.ws()
	b, i := p.b, p.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	p.i = i
	return b[start:i], true
}

// float reads a number in JSON's grammar as a float64: number checks the
// grammar, strconv.ParseFloat converts, reading the bytes in place.
func (p *fastParser) float() (float64, bool) {
	b, ok := p.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	return f, err == nil
}

func (p *fastParser) int() (int, bool) {
	b, ok := p.number()
	if !ok || len(b) > 18 {
		return 0, false
	}
	n, neg := 0, false
	for k, c := range b {
		switch {
		case k == 0 && c == '-':
			neg = true
		case c >= '0' && c <= '9':
			n = n*10 + int(c-'0')
		default:
			return 0, false // fractions and exponents: leave to encoding/json
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

func (p *fastParser) bool() (bool, bool) {
	p.ws()
	switch {
	case len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		p.i += 4
		return true, true
	case len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

func (p *fastParser) trial(t *lab.Trial) bool {
	var ok bool
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			t.Index, ok = p.int()
		case "round":
			t.Round, ok = p.int()
		case "arm":
			t.Arm, ok = p.str()
		case "build":
			t.Build, ok = p.str()
		case "warmup":
			t.Warmup, ok = p.bool()
		case "device":
			t.Device, ok = p.str()
		case "order":
			t.Order, ok = p.str()
		case "status":
			t.Status, ok = p.str()
		case "reason":
			t.Reason, ok = p.str()
		case "duration_s":
			t.Duration, ok = p.float()
		case "metrics":
			ok = p.metrics(t)
		case "host":
			ok = p.host(t)
		case "profile":
			ok = p.profile(t)
		case "profile_round":
			t.ProfileRound, ok = p.bool()
		default:
			return false
		}
		return ok
	})
}

func (p *fastParser) metrics(t *lab.Trial) bool {
	if !p.consume('[') {
		return false
	}
	if p.consume(']') {
		t.Metrics = []lab.Metric{}
		return true
	}
	var buf [16]lab.Metric
	ms := buf[:0]
	for {
		var m lab.Metric
		var ok bool
		if !p.object(func(key []byte) bool {
			switch string(key) {
			case "name":
				m.Name, ok = p.str()
			case "value":
				m.Value, ok = p.float()
			case "unit":
				m.Unit, ok = p.str()
			case "better":
				m.Better, ok = p.str()
			default:
				return false
			}
			return ok
		}) {
			return false
		}
		ms = append(ms, m)
		if p.consume(',') {
			continue
		}
		if !p.consume(']') {
			return false
		}
		t.Metrics = append(p.in.metricSlab(len(ms)), ms...)
		return true
	}
}

// host decodes a trial's host object. A repeated key overwrites, as
// encoding/json does (a repeated "host" fills the same object again).
func (p *fastParser) host(t *lab.Trial) bool {
	h := t.Host
	if h == nil {
		h = p.in.newHost()
		t.Host = h
	}
	var ok bool
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "other_cpus":
			h.OtherCPUs, ok = p.float()
		case "load1":
			h.Load1, ok = p.float()
		case "cpus":
			h.CPUs, ok = p.int()
		default:
			return false
		}
		return ok
	})
}

// profile decodes a trial's profile object (a repeated key overwrites, as
// encoding/json does).
func (p *fastParser) profile(t *lab.Trial) bool {
	r := t.Profile
	if r == nil {
		r = &lab.ProfileRef{}
		t.Profile = r
	}
	var ok bool
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "file":
			r.File, ok = p.str()
		case "sha256":
			r.SHA256, ok = p.str()
		case "samples":
			r.Samples, ok = p.int()
		case "source":
			r.Source, ok = p.str()
		case "note":
			r.Note, ok = p.str()
		default:
			return false
		}
		return ok
	})
}
