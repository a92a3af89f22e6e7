package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// hyperfineExport is the part of hyperfine's --export-json format perflab
// reads. Pointers let null values be reported instead of read as 0.
type hyperfineExport struct {
	Results *[]struct {
		Command   *string     `json:"command"`
		Times     *[]*float64 `json:"times"`
		ExitCodes []*int      `json:"exit_codes"`
	} `json:"results"`
}

// Hyperfine parses a hyperfine --export-json file: each result's "times"
// (seconds, one per run) is a sample named by its "command" (the -n name
// when one was given).
func Hyperfine(name string, data []byte) (*File, error) {
	var ex hyperfineExport
	if err := json.Unmarshal(data, &ex); err != nil {
		return nil, jsonError(name, data, err)
	}
	if ex.Results == nil {
		return nil, &Error{File: name, Field: "results", Msg: "missing: not a hyperfine --export-json file"}
	}
	var c collector
	var notes []string
	seen := map[string]int{}
	for i, r := range *ex.Results {
		field := fmt.Sprintf("results[%d]", i)
		if r.Command == nil {
			return nil, &Error{File: name, Field: field + ".command", Msg: "missing"}
		}
		if r.Times == nil {
			return nil, &Error{File: name, Field: field + ".times", Msg: "missing (hyperfine 1.6 or later exports per-run times)"}
		}
		// Two commands with the same text (hyperfine true true, an A/A)
		// stay two samples: the later ones are named "CMD #2", ...
		cmd := *r.Command
		seen[cmd]++
		if k := seen[cmd]; k > 1 {
			cmd = fmt.Sprintf("%s #%d", cmd, k)
		}
		c.declare(cmd, "s", "lower")
		failed := 0
		for _, code := range r.ExitCodes {
			if code == nil || *code != 0 {
				failed++
			}
		}
		if failed > 0 {
			notes = append(notes, fmt.Sprintf("%s: %q: %d of %d runs exited non-zero (kept, as hyperfine -i did)",
				name, cmd, failed, len(r.ExitCodes)))
		}
		for j, t := range *r.Times {
			if t == nil {
				return nil, &Error{File: name, Field: fmt.Sprintf("%s.times[%d]", field, j), Msg: "null instead of a number"}
			}
			c.add(cmd, "s", "lower", *t)
		}
	}
	return &File{Name: name, Format: FormatHyperfine, Metrics: c.metrics, Notes: notes}, nil
}

// jsonError locates a JSON decoding error by line.
func jsonError(name string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &Error{File: name, Line: lineOf(data, se.Offset), Msg: "invalid JSON: " + se.Error()}
	case errors.As(err, &te):
		return &Error{File: name, Line: lineOf(data, te.Offset), Field: te.Field,
			Msg: fmt.Sprintf("expected %s, found JSON %s", te.Type, te.Value)}
	}
	return &Error{File: name, Msg: "invalid JSON: " + err.Error()}
}

// lineOf returns the 1-based line holding byte offset off.
func lineOf(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}
