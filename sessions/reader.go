package sessions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/perflab/perflab/lab"
)

// Load reads the session file at path. Unreadable event lines (corrupt,
// truncated by a crash) are skipped and listed in Problems with their line
// numbers; only an unreadable header is an error.
func Load(path string) (*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// Read reads a session from r; see Load.
func Read(r io.Reader) (*Session, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	s := &Session{}
	lineNo := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				break
			}
			return s, err
		}
		lineNo++
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		line = bytes.TrimSpace(line)
		if lineNo == 1 {
			if err := readHeader(line, &s.Header); err != nil {
				return nil, fmt.Errorf("line 1: %w", err)
			}
			continue
		}
		if len(line) == 0 {
			continue
		}
		var e lab.Event
		if derr := json.Unmarshal(line, &e); derr != nil {
			msg := "corrupt line skipped: " + derr.Error()
			if !complete {
				msg = "truncated last line skipped (the run was probably interrupted): " + derr.Error()
			}
			s.Problems = append(s.Problems, LineError{Line: lineNo, Err: msg})
		} else if perr := checkEvent(&e); perr != nil {
			s.Problems = append(s.Problems, LineError{Line: lineNo, Err: "invalid event skipped: " + perr.Error()})
		} else {
			s.Events = append(s.Events, e)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
	}
	if lineNo == 0 {
		return nil, errors.New("empty file, not a perflab session")
	}
	return s, nil
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
