package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/perflab/perflab/lab"
)

// Load reads the session file at path. Unreadable event lines (corrupt,
// truncated by a crash) are skipped and listed in Problems with their line
// numbers; only an unreadable header is an error.
func Load(path string) (*Session, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// Read reads a session from r; see Load.
func Read(r io.Reader) (*Session, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return parse(data)
}

// parse splits data into lines and decodes the events in parallel chunks.
func parse(data []byte) (*Session, error) {
	if len(data) == 0 {
		return nil, errors.New("empty file, not a perflab session")
	}
	first, rest, _ := bytes.Cut(data, []byte{'\n'})
	s := &Session{}
	if err := readHeader(bytes.TrimSpace(first), &s.Header); err != nil {
		return nil, fmt.Errorf("line 1: %w", err)
	}
	var lines [][]byte
	for len(rest) > 0 {
		var line []byte
		if k := bytes.IndexByte(rest, '\n'); k >= 0 {
			line, rest = rest[:k+1], rest[k+1:]
		} else {
			line, rest = rest, nil
		}
		lines = append(lines, line)
	}
	// Workers decode disjoint ranges straight into their place in events.
	workers := min(runtime.GOMAXPROCS(0), 1+len(lines)/2000)
	events := make([]lab.Event, len(lines))
	keep := make([]bool, len(lines))
	problems := make([][]LineError, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(lines)/workers, (w+1)*len(lines)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			var in interner
			for k := lo; k < hi; k++ {
				e, prob, ok := decodeLine(lines[k], k+2, &in)
				switch {
				case prob != nil:
					problems[w] = append(problems[w], *prob)
				case ok:
					events[k], keep[k] = e, true
				}
			}
		}()
	}
	wg.Wait()
	n := 0
	for k := range events {
		if keep[k] {
			if n != k {
				events[n] = events[k]
			}
			n++
		}
	}
	s.Events = events[:n:n]
	for _, p := range problems {
		s.Problems = append(s.Problems, p...)
	}
	return s, nil
}

// decodeLine decodes one event line (lineNo is 1-based). Blank lines give
// neither an event nor a problem.
func decodeLine(raw []byte, lineNo int, in *interner) (lab.Event, *LineError, bool) {
	complete := len(raw) > 0 && raw[len(raw)-1] == '\n'
	line := bytes.TrimSpace(raw)
	var e lab.Event
	if len(line) == 0 {
		return e, nil, false
	}
	if !decodeTrialFast(line, &e, in) {
		je := new(lab.Event) // a separate variable keeps e off the heap on the fast path
		derr := json.Unmarshal(line, je)
		e = *je
		if derr != nil {
			msg := "corrupt line skipped: " + derr.Error()
			if !complete {
				msg = "truncated last line skipped (the run was probably interrupted): " + derr.Error()
			}
			return e, &LineError{Line: lineNo, Err: msg}, false
		}
	}
	if perr := checkEvent(&e); perr != nil {
		return e, &LineError{Line: lineNo, Err: "invalid event skipped: " + perr.Error()}, false
	}
	return e, nil, true
}

func readHeader(line []byte, h *Header) error {
	if err := json.Unmarshal(line, h); err != nil {
		return fmt.Errorf("not a perflab session header: %v", err)
	}
	if h.Format != Format {
		return fmt.Errorf("not a perflab session (format %q, want %q)", h.Format, Format)
	}
	if h.Version != Version {
		return fmt.Errorf("session version %d is not supported (this perflab reads version %d)", h.Version, Version)
	}
	return nil
}

// checkEvent rejects events whose payload does not match their type.
func checkEvent(e *lab.Event) error {
	var ok bool
	switch e.Type {
	case lab.EventSettings:
		ok = e.Settings != nil
	case lab.EventProbe:
		ok = e.Probe != nil
	case lab.EventTrial:
		ok = e.Trial != nil
		if ok && e.Trial.Arm == "" {
			return errors.New("trial without an arm")
		}
	case lab.EventToggle:
		ok = e.Toggle != nil
	case lab.EventNote:
		ok = e.Note != nil
	case lab.EventEnd:
		ok = e.End != nil
	case "":
		return errors.New(`no "type"`)
	default:
		return fmt.Errorf("unknown event type %q", e.Type)
	}
	if !ok {
		return fmt.Errorf("%s event without its %q object", e.Type, e.Type)
	}
	return nil
}
