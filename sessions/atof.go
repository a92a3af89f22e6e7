package sessions

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"sync"
)

// parseFloat parses b, a number in JSON's grammar, to the float64
// strconv.ParseFloat returns, bit for bit, about twice as fast for the
// numbers sessions hold (up to 19 significant digits, exponents within
// ±64): Clinger's exact fast path, then the Eisel-Lemire algorithm (D.
// Lemire, "Number parsing at a gigabyte per second", Software: Practice and
// Experience 51(8), 2021; as in Go's internal/strconv/atofeisel.go, BSD
// licence), and strconv.ParseFloat for anything either cannot decide.
func parseFloat(b []byte) (float64, bool) {
	i, neg := 0, false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	var man uint64
	digits, exp10 := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if man == 0 && b[i] == '0' {
			continue // leading zeros are not significant
		}
		if digits == 19 {
			return slowFloat(b)
		}
		man = man*10 + uint64(b[i]-'0')
		digits++
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			exp10--
			if man == 0 && b[i] == '0' {
				continue
			}
			if digits == 19 {
				return slowFloat(b)
			}
			man = man*10 + uint64(b[i]-'0')
			digits++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		e := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e > 10000 {
				return slowFloat(b)
			}
			e = e*10 + int(b[i]-'0')
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	if i != len(b) {
		return slowFloat(b)
	}
	if man == 0 {
		if neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	// Clinger: man and 10^|exp10| are exact float64s, so one operation
	// rounds correctly.
	if man <= 1<<53 && exp10 >= -22 && exp10 <= 22 {
		f := float64(man)
		if exp10 < 0 {
			f /= exactPow10[-exp10]
		} else {
			f *= exactPow10[exp10]
		}
		if neg {
			f = -f
		}
		return f, true
	}
	if f, ok := eiselLemire64(man, exp10, neg); ok {
		return f, true
	}
	return slowFloat(b)
}

func slowFloat(b []byte) (float64, bool) {
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}

var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// The Eisel-Lemire table covers 10^-64 … 10^64; other numbers go to
// strconv.
const (
	pow10Min = -64
	pow10Max = 64
)

type uint128 struct{ hi, lo uint64 }

// pow10Table returns the 128-bit mantissas of 10^e, scaled so the high bit
// is set and rounded down, computed once as Go's pow10gen.go does.
var pow10Table = sync.OnceValue(func() []uint128 {
	one, ten := big.NewInt(1), big.NewInt(10)
	b1p64 := new(big.Int).Lsh(one, 64)
	b1p128 := new(big.Int).Lsh(one, 128)
	r2, r1p128 := big.NewRat(2, 1), new(big.Rat).SetInt(b1p128)
	tab := make([]uint128, 0, pow10Max-pow10Min+1)
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
		tab = append(tab, uint128{hi.Uint64(), lo.Uint64()})
	}
	return tab
})

// eiselLemire64 is Go's internal/strconv eiselLemire64 over pow10Table.
func eiselLemire64(man uint64, exp10 int, neg bool) (float64, bool) {
	if exp10 < pow10Min || exp10 > pow10Max {
		return 0, false
	}
	pow := pow10Table()[exp10-pow10Min]
	exp2 := 1 + (exp10*108853)>>15 // floor(exp10 · log2(10))
	const float64Bias = -1023
	clz := bits.LeadingZeros64(man)
	man <<= uint(clz)
	retExp2 := uint64(exp2+63-float64Bias) - uint64(clz)
	xHi, xLo := bits.Mul64(man, pow.hi)
	if xHi&0x1FF == 0x1FF && xLo+man < man {
		yHi, yLo := bits.Mul64(man, pow.lo)
		mergedHi, mergedLo := xHi, xLo+yHi
		if mergedLo < xLo {
			mergedHi++
		}
		if mergedHi&0x1FF == 0x1FF && mergedLo+1 == 0 && yLo+man < man {
			return 0, false
		}
		xHi, xLo = mergedHi, mergedLo
	}
	msb := xHi >> 63
	retMantissa := xHi >> (msb + 9)
	retExp2 -= 1 ^ msb
	if xLo == 0 && xHi&0x1FF == 0 && retMantissa&3 == 1 {
		return 0, false
	}
	retMantissa += retMantissa & 1
	retMantissa >>= 1
	if retMantissa>>53 > 0 {
		retMantissa >>= 1
		retExp2++
	}
	if retExp2-1 >= 0x7FF-1 {
		return 0, false
	}
	retBits := retExp2<<52 | retMantissa&(1<<52-1)
	if neg {
		retBits |= 1 << 63
	}
	return math.Float64frombits(retBits), true
}
