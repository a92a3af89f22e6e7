package sessions

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// checkFloat fails unless parseFloat agrees with strconv.ParseFloat on s
// bit for bit (s is a number in JSON's grammar).
func checkFloat(t *testing.T, s string) {
	t.Helper()
	want, err := strconv.ParseFloat(s, 64)
	got, ok := parseFloat([]byte(s))
	if ok != (err == nil) || (ok && math.Float64bits(got) != math.Float64bits(want)) {
		t.Fatalf("parseFloat(%q) = %v (%x), %v; strconv: %v (%x), %v", s, got, math.Float64bits(got), ok, want, math.Float64bits(want), err)
	}
}

// TestParseFloatMatchesStrconv over numbers as sessions hold them (float64s
// printed shortest, as encoding/json does), random digit strings of every
// length and exponent, and the edges.
func TestParseFloatMatchesStrconv(t *testing.T) {
	for _, s := range []string{"0", "-0", "0.0", "1", "-1", "0.1", "1e22", "1e23", "9007199254740993", "9007199254740992",
		"123456789012345678", "1234567890123456789", "12345678901234567890", "0.000000000000000000001234", "1e-64", "1e64",
		"1e-65", "1e65", "1e308", "1e309", "2.2250738585072014e-308", "4.9e-324", "1e-400", "179769313486231570000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
		"0.30000000000000004", "100000000000000000000000", "1E5", "1e+5", "5e-1", "0.5e1", "-12.5E-3"} {
		checkFloat(t, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		x := math.Exp(rng.NormFloat64()*10) * float64(1-2*rng.IntN(2))
		checkFloat(t, strconv.FormatFloat(x, 'g', -1, 64))
		checkFloat(t, strconv.FormatFloat(math.Float64frombits(rng.Uint64()), 'g', -1, 64))
		var b []byte
		for range 1 + rng.IntN(21) {
			b = append(b, byte('0'+rng.IntN(10)))
		}
		if b[0] == '0' && len(b) > 1 {
			b[0] = '1'
		}
		if rng.IntN(2) == 0 && len(b) > 1 {
			k := 1 + rng.IntN(len(b)-1)
			b = append(b[:k], append([]byte{'.'}, b[k:]...)...)
		}
		if rng.IntN(2) == 0 {
			b = strconv.AppendInt(append(b, 'e'), int64(rng.IntN(160)-80), 10)
		}
		checkFloat(t, string(b))
	}
}

func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0", "-1.5e-7", "9007199254740993", "0.009337797350346866", "1e-64"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Only the JSON number grammar reaches parseFloat.
		p := fastParser{b: []byte(s)}
		if b, ok := p.number(); !ok || len(b) != len(s) {
			return
		}
		checkFloat(t, s)
	})
}

// TestPow10Table: the literal table is Go's pow10gen.go computation: 10^e
// as an exact rational, scaled into [2¹²⁷, 2¹²⁸), rounded down.
func TestPow10Table(t *testing.T) {
	one, ten := big.NewInt(1), big.NewInt(10)
	b1p64 := new(big.Int).Lsh(one, 64)
	b1p128 := new(big.Int).Lsh(one, 128)
	r2, r1p128 := big.NewRat(2, 1), new(big.Rat).SetInt(b1p128)
	for e := int64(pow10Min); e <= pow10Max; e++ {
		var r *big.Rat
		if e >= 0 {
			r = new(big.Rat).SetInt(new(big.Int).Exp(ten, big.NewInt(e), nil))
		} else {
			r = new(big.Rat).SetFrac(one, new(big.Int).Exp(ten, big.NewInt(-e), nil))
		}
		for r.Cmp(r1p128) < 0 {
			r.Mul(r, r2)
		}
		for r.Cmp(r1p128) >= 0 {
			r.Quo(r, r2)
		}
		d := new(big.Int).Div(r.Num(), r.Denom())
		hi, lo := new(big.Int).DivMod(d, b1p64, new(big.Int))
		if got, want := pow10Table[e-pow10Min], (uint128{hi.Uint64(), lo.Uint64()}); got != want {
			t.Errorf("pow10Table for 1e%d = %#x, want %#x", e, got, want)
		}
	}
}
