package sessions

import "github.com/perflab/perflab/lab"

// NewTrialDecoder returns the hand-written trial decoder with its own
// interner, for the external benchmarks that compare it with the maintained
// decoders.
func NewTrialDecoder() func(line []byte, e *lab.Event) bool {
	var in interner
	return func(line []byte, e *lab.Event) bool { return decodeTrialFast(line, e, &in) }
}

// Parse is parse for the external benchmarks: fast false decodes every
// line with encoding/json.
func Parse(data []byte, fast bool) (*Session, error) { return parse(data, fast, false) }
