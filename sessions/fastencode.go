package sessions

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/perflab/perflab/lab"
)

// appendTrialEvent appends e encoded exactly as json.Marshal(e) encodes it
// to dst, without reflection or allocation beyond growing dst. The runner
// writes one trial event between two trials, so its encoding is on the
// critical path of a run of short trials; encoding/json costs several
// microseconds there, this a fraction of one.
//
// It handles only a trial event: Type "trial", Trial set and every other
// pointer field nil. For anything else, and for a NaN or infinite float
// (which json.Marshal refuses), it reports false and the caller encodes e
// with encoding/json; dst is then returned unchanged.
func appendTrialEvent(dst []byte, e lab.Event) ([]byte, bool) {
	tr := e.Trial
	if e.Type != lab.EventTrial || tr == nil || e.Settings != nil || e.Probe != nil ||
		e.Toggle != nil || e.Note != nil || e.End != nil || e.Device != nil || e.Start != nil {
		return dst, false
	}
	if !finite(e.T) || !finite(tr.Duration) {
		return dst, false
	}
	for i := range tr.Metrics {
		if !finite(tr.Metrics[i].Value) {
			return dst, false
		}
	}
	if h := tr.Host; h != nil && (!finite(h.OtherCPUs) || !finite(h.Load1)) {
		return dst, false
	}
	dst = append(dst, `{"type":"trial","t":`...)
	dst = appendJSONFloat(dst, e.T)
	dst = append(dst, `,"trial":{"index":`...)
	dst = strconv.AppendInt(dst, int64(tr.Index), 10)
	dst = append(dst, `,"round":`...)
	dst = strconv.AppendInt(dst, int64(tr.Round), 10)
	dst = append(dst, `,"arm":`...)
	dst = appendJSONString(dst, tr.Arm)
	dst = append(dst, `,"build":`...)
	dst = appendJSONString(dst, tr.Build)
	if tr.Warmup {
		dst = append(dst, `,"warmup":true`...)
	}
	dst = appendOmitEmpty(dst, `,"device":`, tr.Device)
	dst = append(dst, `,"order":`...)
	dst = appendJSONString(dst, tr.Order)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, tr.Status)
	dst = appendOmitEmpty(dst, `,"reason":`, tr.Reason)
	dst = append(dst, `,"duration_s":`...)
	dst = appendJSONFloat(dst, tr.Duration)
	if tr.Metrics == nil {
		// The runner always sets metrics ([] when there are none); a nil
		// slice is encoded as encoding/json does.
		dst = append(dst, `,"metrics":null`...)
	} else {
		dst = append(dst, `,"metrics":[`...)
		for i := range tr.Metrics {
			m := &tr.Metrics[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"name":`...)
			dst = appendJSONString(dst, m.Name)
			dst = append(dst, `,"value":`...)
			dst = appendJSONFloat(dst, m.Value)
			dst = appendOmitEmpty(dst, `,"unit":`, m.Unit)
			dst = appendOmitEmpty(dst, `,"better":`, m.Better)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if h := tr.Host; h != nil {
		dst = append(dst, `,"host":{"other_cpus":`...)
		dst = appendJSONFloat(dst, h.OtherCPUs)
		dst = append(dst, `,"load1":`...)
		dst = appendJSONFloat(dst, h.Load1)
		dst = append(dst, `,"cpus":`...)
		dst = strconv.AppendInt(dst, int64(h.CPUs), 10)
		dst = append(dst, '}')
	}
	if pr := tr.Profile; pr != nil {
		dst = append(dst, `,"profile":{"file":`...)
		dst = appendJSONString(dst, pr.File)
		dst = append(dst, `,"sha256":`...)
		dst = appendJSONString(dst, pr.SHA256)
		dst = append(dst, `,"samples":`...)
		dst = strconv.AppendInt(dst, int64(pr.Samples), 10)
		dst = append(dst, `,"source":`...)
		dst = appendJSONString(dst, pr.Source)
		dst = appendOmitEmpty(dst, `,"note":`, pr.Note)
		dst = append(dst, '}')
	}
	if tr.ProfileRound {
		dst = append(dst, `,"profile_round":true`...)
	}
	dst = append(dst, "}}"...)
	return dst, true
}

// appendJSONFloat appends f as encoding/json encodes a float64: like
// JavaScript's number to string conversion, the shortest decimal that
// reads back as f, in exponent form below 1e-6 and from 1e21 on, with a
// one-digit negative exponent not padded (1e-7, not 1e-07). f must be
// finite: json.Marshal refuses NaN and infinities.
func appendJSONFloat(dst []byte, f float64) []byte {
	// An integer below 2^53 in magnitude (counts, whole milliseconds) is
	// its own shortest decimal: floats there are at most 1 apart, so no
	// shorter number rounds to it. -0 prints as "-0" and is left to
	// strconv.
	if i := int64(f); float64(i) == f && i != 0 && i > -1<<53 && i < 1<<53 {
		return strconv.AppendInt(dst, i, 10)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// finite reports whether f is neither NaN nor infinite.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendOmitEmpty appends key and s unless s is empty, as encoding/json
// does for a string field tagged omitempty.
func appendOmitEmpty(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendJSONString(append(dst, key...), s)
}

// appendJSONString appends s quoted and escaped exactly as json.Marshal
// escapes a string (with its default HTML escaping): ", \ and control
// characters escaped (\b \f \n \r \t by name, others as \u00XX), <, > and
// & as \u003c \u003e \u0026, U+2028 and U+2029 as \u2028 and \u2029, and
// each byte of invalid UTF-8 replaced by \ufffd.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe(b) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control characters, <, > and &
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// jsonSafe reports whether json.Marshal copies the ASCII byte b into a
// string unescaped: printable ASCII and DEL, except ", \, <, > and &.
func jsonSafe(b byte) bool {
	return b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
}
