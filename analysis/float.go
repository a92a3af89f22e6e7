package analysis

import (
	"encoding/json"
	"math"
)

// Float is a statistic that may be undefined. An undefined value (zero
// variance, a zero denominator, too few samples) is held as NaN and written
// to JSON as null, so reports never contain NaN or a made-up number. Check
// Defined before using the value.
type Float float64

// undefined is the undefined Float.
func undefined() Float { return Float(math.NaN()) }

// defined wraps x, turning NaN and ±Inf into the undefined Float.
func defined(x float64) Float {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return undefined()
	}
	return Float(x)
}

// Defined reports whether f holds a finite value.
func (f Float) Defined() bool {
	return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
}

// Or returns f as a float64, or def when f is undefined.
func (f Float) Or(def float64) float64 {
	if !f.Defined() {
		return def
	}
	return float64(f)
}

// MarshalJSON writes null for an undefined value and the number otherwise.
func (f Float) MarshalJSON() ([]byte, error) {
	if !f.Defined() {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// UnmarshalJSON reads null as undefined.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = undefined()
		return nil
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*f = Float(x)
	return nil
}
