package sessions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/perflab/perflab/lab"
)

// typicalTrial is a trial event as the runner writes it for a build that
// reports three metrics.
func typicalTrial() lab.Event {
	return lab.Event{Type: lab.EventTrial, T: 12.345678901, Trial: &lab.Trial{
		Index: 1234, Round: 617, Arm: lab.ArmTreatment, Build: "app-release-b.apk",
		Order: "alternate", Status: lab.StatusOK, Duration: 0.004817263,
		Metrics: []lab.Metric{
			{Name: "wall_ms", Value: 4.817263, Unit: "ms", Better: "lower"},
			{Name: "frames", Value: 120, Unit: "frames", Better: "higher"},
			{Name: "jank", Value: 0.0125},
		},
	}}
}

// trialWith returns typicalTrial changed by edit.
func trialWith(edit func(e *lab.Event, tr *lab.Trial)) lab.Event {
	e := typicalTrial()
	tr := *e.Trial
	tr.Metrics = append([]lab.Metric(nil), tr.Metrics...)
	e.Trial = &tr
	edit(&e, &tr)
	return e
}

func withFloat(f float64) lab.Event {
	return trialWith(func(e *lab.Event, tr *lab.Trial) { e.T, tr.Duration, tr.Metrics[0].Value = f, -f, f })
}

func withHost(h lab.HostLoad) lab.Event {
	return trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Host = &h })
}

func withString(s string) lab.Event {
	return trialWith(func(e *lab.Event, tr *lab.Trial) {
		tr.Arm, tr.Build, tr.Device, tr.Order, tr.Status, tr.Reason = s, s, s, s, s, s
		tr.Metrics[0].Name, tr.Metrics[0].Unit, tr.Metrics[0].Better = s, s, s
	})
}

func TestAppendTrialEventMatchesJSON(t *testing.T) {
	tests := []struct {
		name string
		e    lab.Event
		fast bool // appendTrialEvent encodes it (else it falls back)
	}{
		{"typical", typicalTrial(), true},
		{"zero trial", lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Metrics: []lab.Metric{}}}, true},
		{"nil metrics", trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Metrics = nil }), true},
		{"empty metrics", trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Metrics = []lab.Metric{} }), true},
		{"one metric", trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Metrics = tr.Metrics[:1] }), true},
		{"warmup device reason", trialWith(func(_ *lab.Event, tr *lab.Trial) {
			tr.Warmup, tr.Device, tr.Reason, tr.Status = true, "pixel-7 (emulator-5556)", "exit status 1", lab.StatusFailed
		}), true},
		{"negative ints", trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Index, tr.Round = -1, math.MinInt }), true},
		{"max int", trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Index, tr.Round = math.MaxInt, 0 }), true},
		{"host", withHost(lab.HostLoad{OtherCPUs: 1.337, Load1: 2.07, CPUs: 2}), true},
		{"host zero", withHost(lab.HostLoad{}), true},
		{"host negative", withHost(lab.HostLoad{OtherCPUs: -0.5, Load1: 0, CPUs: 128}), true},
		{"host nil metrics", trialWith(func(_ *lab.Event, tr *lab.Trial) {
			tr.Metrics, tr.Host = nil, &lab.HostLoad{OtherCPUs: 0.25, Load1: 1e-7, CPUs: 1}
		}), true},

		{"float 0", withFloat(0), true},
		{"float -0", withFloat(math.Copysign(0, -1)), true},
		{"float 1", withFloat(1), true},
		{"float 123456789", withFloat(123456789), true},
		{"float 0.1", withFloat(0.1), true},
		{"float 1e-6", withFloat(1e-6), true},
		{"float below 1e-6", withFloat(math.Nextafter(1e-6, 0)), true},
		{"float 1e-7", withFloat(1e-7), true},
		{"float 1.5e-10", withFloat(1.5e-10), true},
		{"float 1e-100", withFloat(1e-100), true},
		{"float smallest", withFloat(math.SmallestNonzeroFloat64), true},
		{"float below 1e21", withFloat(math.Nextafter(1e21, 0)), true},
		{"float 1e21", withFloat(1e21), true},
		{"float 1.2345e22", withFloat(1.2345e22), true},
		{"float 1e100", withFloat(1e100), true},
		{"float max", withFloat(math.MaxFloat64), true},
		{"float -7", withFloat(-7), true},
		{"float 1e15", withFloat(1e15), true},
		{"float 2^53-1", withFloat(1<<53 - 1), true},
		{"float 2^53", withFloat(1 << 53), true},
		{"float 2^53+2", withFloat(1<<53 + 2), true},
		{"float 2^63", withFloat(1 << 63), true},
		{"float 1e20", withFloat(1e20), true},
		{"float 1/3", withFloat(1.0 / 3), true},
		{"float -2.5e-8", withFloat(-2.5e-8), true},

		{"string empty", withString(""), true},
		{"string plain", withString("hello world ~!@#$%^*()_+{}|:?`-=[];',./"), true},
		{"string quote backslash", withString(`say "hi" \ bye`), true},
		{"string html", withString("<a href='x'>&amp;</a>"), true},
		{"string controls", withString("a\b\f\n\r\tz\x00\x01\x1f\x7f"), true},
		{"string unicode", withString("héllo wörld ✓ 日本 🚀"), true},
		{"string line separators", withString("a\u2028b\u2029c\u202a"), true},
		{"string invalid utf8", withString("a\xffb\xc3(c\xe2\x82d\xed\xa0\x80e\xf4\x90\x80\x80"), true},
		{"string trailing partial rune", withString("ok\xe2\x82"), true},
		{"string replacement char", withString("\ufffd"), true},

		{"NaN t", withFloat(math.NaN()), false},
		{"+Inf duration", trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Duration = math.Inf(1) }), false},
		{"-Inf metric", trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Metrics[2].Value = math.Inf(-1) }), false},
		{"NaN host", withHost(lab.HostLoad{OtherCPUs: math.NaN()}), false},
		{"+Inf load", withHost(lab.HostLoad{Load1: math.Inf(1)}), false},
		{"no trial", lab.Event{Type: lab.EventTrial, T: 1}, false},
		{"other type", trialWith(func(e *lab.Event, _ *lab.Trial) { e.Type = lab.EventNote }), false},
		{"note too", trialWith(func(e *lab.Event, _ *lab.Trial) { e.Note = &lab.Note{Text: "x"} }), false},
		{"settings too", trialWith(func(e *lab.Event, _ *lab.Trial) { e.Settings = &lab.Settings{} }), false},
		{"probe too", trialWith(func(e *lab.Event, _ *lab.Trial) { e.Probe = &lab.ProbeSample{} }), false},
		{"toggle too", trialWith(func(e *lab.Event, _ *lab.Trial) { e.Toggle = &lab.Toggle{} }), false},
		{"end too", trialWith(func(e *lab.Event, _ *lab.Trial) { e.End = &lab.End{} }), false},
		{"device too", trialWith(func(e *lab.Event, _ *lab.Trial) { e.Device = &lab.DeviceState{} }), false},
		{"start too", trialWith(func(e *lab.Event, _ *lab.Trial) { e.Start = &lab.TrialStart{} }), false},
		{"note event", lab.Event{Type: lab.EventNote, Note: &lab.Note{Text: "hi"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := appendTrialEvent([]byte("prefix"), tt.e)
			if ok != tt.fast {
				t.Fatalf("appendTrialEvent ok = %v, want %v", ok, tt.fast)
			}
			if !ok {
				return
			}
			want, err := json.Marshal(tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Errorf("appendTrialEvent:\n got %s\nwant prefix%s", got, want)
			}
		})
	}
}

// TestWriterTrialsSkipJSON fails if a trial event as the runner writes it
// stops taking the fast path: encoding/json allocates at least the line it
// returns, the fast path nothing at all.
func TestWriterTrialsSkipJSON(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "s.jsonl"), Header{ID: "enc"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	e := typicalTrial()
	if err := w.Write(e); err != nil { // grows the buffer
		t.Fatal(err)
	}
	if _, ok := appendTrialEvent(nil, e); !ok {
		t.Fatal("appendTrialEvent refuses a typical trial event")
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs >= 1 {
		t.Errorf("Writer.Write of a trial event: %.1f allocations per event, want 0 (encoding/json used?)", allocs)
	}
}

// TestWriterLinesMatchJSON checks the file a Writer writes: every event,
// encoded fast or by encoding/json, is json.Marshal's line.
func TestWriterLinesMatchJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, Header{ID: "enc"})
	if err != nil {
		t.Fatal(err)
	}
	events := []lab.Event{
		{Type: lab.EventSettings, Settings: &lab.Settings{Order: "alternate"}},
		typicalTrial(),
		withString("<\"odd\"\n\xff>"),
		{Type: lab.EventNote, T: 1.5, Note: &lab.Note{Text: "a note"}},
		trialWith(func(_ *lab.Event, tr *lab.Trial) { tr.Warmup, tr.Metrics = true, []lab.Metric{} }),
		{Type: lab.EventEnd, T: 2, End: &lab.End{Reason: "completed"}},
	}
	for _, e := range events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(withFloat(math.NaN())); err == nil {
		t.Error("writing a NaN trial: no error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for i, e := range events {
		want, _ := json.Marshal(e)
		if !sc.Scan() {
			t.Fatalf("line %d missing", i+2)
		}
		if got := sc.Bytes(); !bytes.Equal(got, want) {
			t.Errorf("line %d:\n got %s\nwant %s", i+2, got, want)
		}
	}
	if sc.Scan() {
		t.Errorf("extra line %s", sc.Bytes())
	}
}

// FuzzTrialEventEncoding compares appendTrialEvent with json.Marshal on
// fuzzed trials. Run it with
//
//	go test ./sessions -run '^$' -fuzz FuzzTrialEventEncoding -fuzztime 60s
func FuzzTrialEventEncoding(f *testing.F) {
	f.Add(12.5, 0.004, 4.8, 3, 1, "treatment", "b.apk", "", "alternate", "ok", "", "wall_ms", "ms", "lower", false, 1)
	f.Add(0.0, 1e-7, 1e21, 0, 0, "control", "a", "pixel", "fixed", "failed", "exit status 1", "x", "", "", true, 0)
	f.Add(math.Copysign(0, -1), -1e-300, 123456789.0, -5, 7, "<&>", "\"\\", "\u2028\u2029", "\x00\x1f\x7f", "é✓🚀", "\xff\xc3(", "\t\n\r\b\f", "", "higher", false, 3)
	f.Add(math.NaN(), math.Inf(1), 1.0, 1, 1, "a", "b", "c", "d", "e", "f", "g", "h", "i", true, -1)
	f.Fuzz(func(t *testing.T, ts, dur, value float64, index, round int,
		arm, build, device, order, status, reason, name, unit, better string, warmup bool, nmetrics int) {
		e := fuzzTrialEvent(ts, dur, value, index, round, arm, build, device, order, status, reason, name, unit, better, warmup, nmetrics%4)
		got, ok := appendTrialEvent(nil, e)
		want, err := json.Marshal(e)
		if !ok {
			if err == nil && finite(ts) && finite(dur) && finite(value) {
				t.Fatalf("appendTrialEvent refused %+v; json.Marshal gives %s", *e.Trial, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("appendTrialEvent encoded what json.Marshal refuses (%v): %s", err, got)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("appendTrialEvent:\n got %s\nwant %s", got, want)
		}
	})
}

// fuzzTrialEvent is the trial event of the fuzz targets' arguments: with
// nmetrics metrics (nil metrics when negative) whose name, unit and
// better rotate, and a host load made of the numbers when index%3 is 1.
func fuzzTrialEvent(ts, dur, value float64, index, round int,
	arm, build, device, order, status, reason, name, unit, better string, warmup bool, nmetrics int) lab.Event {
	e := lab.Event{Type: lab.EventTrial, T: ts, Trial: &lab.Trial{
		Index: index, Round: round, Arm: arm, Build: build, Warmup: warmup, Device: device,
		Order: order, Status: status, Reason: reason, Duration: dur,
	}}
	if nmetrics >= 0 {
		e.Trial.Metrics = []lab.Metric{}
		for i := range nmetrics {
			e.Trial.Metrics = append(e.Trial.Metrics, lab.Metric{Name: name, Value: value * float64(i+1), Unit: unit, Better: better})
			name, unit, better = unit, better, name
		}
	}
	if index%3 == 1 {
		e.Trial.Host = &lab.HostLoad{OtherCPUs: value - dur, Load1: dur, CPUs: round}
	}
	return e
}

// BenchmarkTrialEventEncoding compares encoding a typical trial event with
// json.Marshal and with appendTrialEvent into a reused buffer, as
// Writer.Write does.
func BenchmarkTrialEventEncoding(b *testing.B) {
	e := typicalTrial()
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appendTrialEvent", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = appendTrialEvent(buf[:0], e); !ok {
				b.Fatal("not encoded")
			}
		}
	})
}

// fillNonZero sets every field of the struct v points to (and of the
// structs in its slices and pointers) to a non-zero value, so that no
// field is left out by omitempty; fields tagged json:"-" stay zero.
func fillNonZero(v reflect.Value) {
	for i := 0; i < v.NumField(); i++ {
		if v.Type().Field(i).Tag.Get("json") == "-" {
			continue // never in a file (lab.Trial.Profiled)
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + v.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 7))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.25)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			s := reflect.MakeSlice(f.Type(), 2, 2)
			for j := 0; j < 2; j++ {
				if s.Index(j).Kind() == reflect.Struct {
					fillNonZero(s.Index(j))
				}
			}
			f.Set(s)
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			if p.Elem().Kind() == reflect.Struct {
				fillNonZero(p.Elem())
			}
			f.Set(p)
		}
	}
}

// TestAppendTrialEventCoversEveryField: a trial event whose Trial and
// metrics have every field set encodes as encoding/json does. A field
// added to lab.Trial or lab.Metric that appendTrialEvent does not know
// fails here, instead of going missing from session files.
func TestAppendTrialEventCoversEveryField(t *testing.T) {
	tr := &lab.Trial{}
	fillNonZero(reflect.ValueOf(tr).Elem())
	e := lab.Event{Type: lab.EventTrial, T: 1.5, Trial: tr}
	for i := 0; i < reflect.TypeOf(e).NumField(); i++ {
		f := reflect.TypeOf(e).Field(i)
		if f.Type.Kind() != reflect.Pointer && f.Name != "Type" && f.Name != "T" {
			t.Errorf("lab.Event has a new field %s: teach appendTrialEvent to write it (or to fall back when it is set)", f.Name)
		}
	}
	want, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendTrialEvent(nil, e)
	if !ok || string(got) != string(want) {
		t.Errorf("every field set:\n got %s (ok %v)\nwant %s", got, ok, want)
	}
}
