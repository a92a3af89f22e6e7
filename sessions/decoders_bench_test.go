package sessions_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/perflab/perflab/internal/gensession"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// BenchmarkDecoders100k decodes the trial lines of `perflab report`'s
// 100,000-trial bench session (bench/gensession) one after the other, with
// the hand-written decoder and with encoding/json, and loads the whole
// session (in parallel chunks, then the integrity checks) each way: the
// figures that decide whether sessions keeps its own decoder (see
// decodeTrialFast). Compare the ratios within one run: the machine is
// noisy.
func BenchmarkDecoders100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.jsonl")
	if err := gensession.Write(path, 100000, 0.01, 1); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	_, rest, _ := bytes.Cut(data, []byte{'\n'})
	var lines [][]byte // the trial lines: the session's bulk
	for line := range bytes.Lines(rest) {
		if bytes.HasPrefix(line, []byte(`{"type":"trial"`)) {
			lines = append(lines, line)
		}
	}
	events := len(bytes.Split(bytes.TrimSpace(rest), []byte{'\n'}))
	decoders := []struct {
		name    string
		decoder func() func([]byte, *lab.Event) bool // one per pass over the lines
	}{
		{"lines/perflab", sessions.NewTrialDecoder},
		{"lines/encoding-json", func() func([]byte, *lab.Event) bool {
			return func(line []byte, e *lab.Event) bool { return json.Unmarshal(line, e) == nil }
		}},
	}
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(rest)))
			for b.Loop() {
				decode := d.decoder()
				for _, line := range lines {
					var e lab.Event
					if !decode(line, &e) || e.Trial == nil {
						b.Fatalf("%s refused %s", d.name, line)
					}
				}
			}
		})
	}
	for _, fast := range []bool{true, false} {
		name := "load/perflab"
		if !fast {
			name = "load/encoding-json"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if s, err := sessions.Parse(data, fast); err != nil || len(s.Events) != events {
					b.Fatal(err)
				}
			}
		})
	}
}
