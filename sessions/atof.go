package sessions

import (
	"math"
	"math/bits"
	"strconv"
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
	if f, ok := floatFrom(man, exp10, neg); ok {
		return f, true
	}
	return slowFloat(b)
}

// floatFrom returns the float64 nearest to man·10^exp10, negated when neg,
// when Clinger's exact fast path or the Eisel-Lemire algorithm decides it;
// false when strconv must.
func floatFrom(man uint64, exp10 int, neg bool) (float64, bool) {
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
	return eiselLemire64(man, exp10, neg)
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

// pow10Table holds the 128-bit mantissas of 10^e for e = pow10Min …
// pow10Max, scaled so the high bit is set and rounded down, as Go's
// pow10gen.go computes them (TestPow10Table recomputes them with
// math/big). A literal: computing them at the first number parsed cost
// about 3 ms of every report.
var pow10Table = [pow10Max - pow10Min + 1]uint128{
	{0xA87FEA27A539E9A5, 0x3F2398D747B36224}, // 1e-64
	{0xD29FE4B18E88640E, 0x8EEC7F0D19A03AAD}, // 1e-63
	{0x83A3EEEEF9153E89, 0x1953CF68300424AC}, // 1e-62
	{0xA48CEAAAB75A8E2B, 0x5FA8C3423C052DD7}, // 1e-61
	{0xCDB02555653131B6, 0x3792F412CB06794D}, // 1e-60
	{0x808E17555F3EBF11, 0xE2BBD88BBEE40BD0}, // 1e-59
	{0xA0B19D2AB70E6ED6, 0x5B6ACEAEAE9D0EC4}, // 1e-58
	{0xC8DE047564D20A8B, 0xF245825A5A445275}, // 1e-57
	{0xFB158592BE068D2E, 0xEED6E2F0F0D56712}, // 1e-56
	{0x9CED737BB6C4183D, 0x55464DD69685606B}, // 1e-55
	{0xC428D05AA4751E4C, 0xAA97E14C3C26B886}, // 1e-54
	{0xF53304714D9265DF, 0xD53DD99F4B3066A8}, // 1e-53
	{0x993FE2C6D07B7FAB, 0xE546A8038EFE4029}, // 1e-52
	{0xBF8FDB78849A5F96, 0xDE98520472BDD033}, // 1e-51
	{0xEF73D256A5C0F77C, 0x963E66858F6D4440}, // 1e-50
	{0x95A8637627989AAD, 0xDDE7001379A44AA8}, // 1e-49
	{0xBB127C53B17EC159, 0x5560C018580D5D52}, // 1e-48
	{0xE9D71B689DDE71AF, 0xAAB8F01E6E10B4A6}, // 1e-47
	{0x9226712162AB070D, 0xCAB3961304CA70E8}, // 1e-46
	{0xB6B00D69BB55C8D1, 0x3D607B97C5FD0D22}, // 1e-45
	{0xE45C10C42A2B3B05, 0x8CB89A7DB77C506A}, // 1e-44
	{0x8EB98A7A9A5B04E3, 0x77F3608E92ADB242}, // 1e-43
	{0xB267ED1940F1C61C, 0x55F038B237591ED3}, // 1e-42
	{0xDF01E85F912E37A3, 0x6B6C46DEC52F6688}, // 1e-41
	{0x8B61313BBABCE2C6, 0x2323AC4B3B3DA015}, // 1e-40
	{0xAE397D8AA96C1B77, 0xABEC975E0A0D081A}, // 1e-39
	{0xD9C7DCED53C72255, 0x96E7BD358C904A21}, // 1e-38
	{0x881CEA14545C7575, 0x7E50D64177DA2E54}, // 1e-37
	{0xAA242499697392D2, 0xDDE50BD1D5D0B9E9}, // 1e-36
	{0xD4AD2DBFC3D07787, 0x955E4EC64B44E864}, // 1e-35
	{0x84EC3C97DA624AB4, 0xBD5AF13BEF0B113E}, // 1e-34
	{0xA6274BBDD0FADD61, 0xECB1AD8AEACDD58E}, // 1e-33
	{0xCFB11EAD453994BA, 0x67DE18EDA5814AF2}, // 1e-32
	{0x81CEB32C4B43FCF4, 0x80EACF948770CED7}, // 1e-31
	{0xA2425FF75E14FC31, 0xA1258379A94D028D}, // 1e-30
	{0xCAD2F7F5359A3B3E, 0x096EE45813A04330}, // 1e-29
	{0xFD87B5F28300CA0D, 0x8BCA9D6E188853FC}, // 1e-28
	{0x9E74D1B791E07E48, 0x775EA264CF55347D}, // 1e-27
	{0xC612062576589DDA, 0x95364AFE032A819D}, // 1e-26
	{0xF79687AED3EEC551, 0x3A83DDBD83F52204}, // 1e-25
	{0x9ABE14CD44753B52, 0xC4926A9672793542}, // 1e-24
	{0xC16D9A0095928A27, 0x75B7053C0F178293}, // 1e-23
	{0xF1C90080BAF72CB1, 0x5324C68B12DD6338}, // 1e-22
	{0x971DA05074DA7BEE, 0xD3F6FC16EBCA5E03}, // 1e-21
	{0xBCE5086492111AEA, 0x88F4BB1CA6BCF584}, // 1e-20
	{0xEC1E4A7DB69561A5, 0x2B31E9E3D06C32E5}, // 1e-19
	{0x9392EE8E921D5D07, 0x3AFF322E62439FCF}, // 1e-18
	{0xB877AA3236A4B449, 0x09BEFEB9FAD487C2}, // 1e-17
	{0xE69594BEC44DE15B, 0x4C2EBE687989A9B3}, // 1e-16
	{0x901D7CF73AB0ACD9, 0x0F9D37014BF60A10}, // 1e-15
	{0xB424DC35095CD80F, 0x538484C19EF38C94}, // 1e-14
	{0xE12E13424BB40E13, 0x2865A5F206B06FB9}, // 1e-13
	{0x8CBCCC096F5088CB, 0xF93F87B7442E45D3}, // 1e-12
	{0xAFEBFF0BCB24AAFE, 0xF78F69A51539D748}, // 1e-11
	{0xDBE6FECEBDEDD5BE, 0xB573440E5A884D1B}, // 1e-10
	{0x89705F4136B4A597, 0x31680A88F8953030}, // 1e-9
	{0xABCC77118461CEFC, 0xFDC20D2B36BA7C3D}, // 1e-8
	{0xD6BF94D5E57A42BC, 0x3D32907604691B4C}, // 1e-7
	{0x8637BD05AF6C69B5, 0xA63F9A49C2C1B10F}, // 1e-6
	{0xA7C5AC471B478423, 0x0FCF80DC33721D53}, // 1e-5
	{0xD1B71758E219652B, 0xD3C36113404EA4A8}, // 1e-4
	{0x83126E978D4FDF3B, 0x645A1CAC083126E9}, // 1e-3
	{0xA3D70A3D70A3D70A, 0x3D70A3D70A3D70A3}, // 1e-2
	{0xCCCCCCCCCCCCCCCC, 0xCCCCCCCCCCCCCCCC}, // 1e-1
	{0x8000000000000000, 0x0000000000000000}, // 1e0
	{0xA000000000000000, 0x0000000000000000}, // 1e1
	{0xC800000000000000, 0x0000000000000000}, // 1e2
	{0xFA00000000000000, 0x0000000000000000}, // 1e3
	{0x9C40000000000000, 0x0000000000000000}, // 1e4
	{0xC350000000000000, 0x0000000000000000}, // 1e5
	{0xF424000000000000, 0x0000000000000000}, // 1e6
	{0x9896800000000000, 0x0000000000000000}, // 1e7
	{0xBEBC200000000000, 0x0000000000000000}, // 1e8
	{0xEE6B280000000000, 0x0000000000000000}, // 1e9
	{0x9502F90000000000, 0x0000000000000000}, // 1e10
	{0xBA43B74000000000, 0x0000000000000000}, // 1e11
	{0xE8D4A51000000000, 0x0000000000000000}, // 1e12
	{0x9184E72A00000000, 0x0000000000000000}, // 1e13
	{0xB5E620F480000000, 0x0000000000000000}, // 1e14
	{0xE35FA931A0000000, 0x0000000000000000}, // 1e15
	{0x8E1BC9BF04000000, 0x0000000000000000}, // 1e16
	{0xB1A2BC2EC5000000, 0x0000000000000000}, // 1e17
	{0xDE0B6B3A76400000, 0x0000000000000000}, // 1e18
	{0x8AC7230489E80000, 0x0000000000000000}, // 1e19
	{0xAD78EBC5AC620000, 0x0000000000000000}, // 1e20
	{0xD8D726B7177A8000, 0x0000000000000000}, // 1e21
	{0x878678326EAC9000, 0x0000000000000000}, // 1e22
	{0xA968163F0A57B400, 0x0000000000000000}, // 1e23
	{0xD3C21BCECCEDA100, 0x0000000000000000}, // 1e24
	{0x84595161401484A0, 0x0000000000000000}, // 1e25
	{0xA56FA5B99019A5C8, 0x0000000000000000}, // 1e26
	{0xCECB8F27F4200F3A, 0x0000000000000000}, // 1e27
	{0x813F3978F8940984, 0x4000000000000000}, // 1e28
	{0xA18F07D736B90BE5, 0x5000000000000000}, // 1e29
	{0xC9F2C9CD04674EDE, 0xA400000000000000}, // 1e30
	{0xFC6F7C4045812296, 0x4D00000000000000}, // 1e31
	{0x9DC5ADA82B70B59D, 0xF020000000000000}, // 1e32
	{0xC5371912364CE305, 0x6C28000000000000}, // 1e33
	{0xF684DF56C3E01BC6, 0xC732000000000000}, // 1e34
	{0x9A130B963A6C115C, 0x3C7F400000000000}, // 1e35
	{0xC097CE7BC90715B3, 0x4B9F100000000000}, // 1e36
	{0xF0BDC21ABB48DB20, 0x1E86D40000000000}, // 1e37
	{0x96769950B50D88F4, 0x1314448000000000}, // 1e38
	{0xBC143FA4E250EB31, 0x17D955A000000000}, // 1e39
	{0xEB194F8E1AE525FD, 0x5DCFAB0800000000}, // 1e40
	{0x92EFD1B8D0CF37BE, 0x5AA1CAE500000000}, // 1e41
	{0xB7ABC627050305AD, 0xF14A3D9E40000000}, // 1e42
	{0xE596B7B0C643C719, 0x6D9CCD05D0000000}, // 1e43
	{0x8F7E32CE7BEA5C6F, 0xE4820023A2000000}, // 1e44
	{0xB35DBF821AE4F38B, 0xDDA2802C8A800000}, // 1e45
	{0xE0352F62A19E306E, 0xD50B2037AD200000}, // 1e46
	{0x8C213D9DA502DE45, 0x4526F422CC340000}, // 1e47
	{0xAF298D050E4395D6, 0x9670B12B7F410000}, // 1e48
	{0xDAF3F04651D47B4C, 0x3C0CDD765F114000}, // 1e49
	{0x88D8762BF324CD0F, 0xA5880A69FB6AC800}, // 1e50
	{0xAB0E93B6EFEE0053, 0x8EEA0D047A457A00}, // 1e51
	{0xD5D238A4ABE98068, 0x72A4904598D6D880}, // 1e52
	{0x85A36366EB71F041, 0x47A6DA2B7F864750}, // 1e53
	{0xA70C3C40A64E6C51, 0x999090B65F67D924}, // 1e54
	{0xD0CF4B50CFE20765, 0xFFF4B4E3F741CF6D}, // 1e55
	{0x82818F1281ED449F, 0xBFF8F10E7A8921A4}, // 1e56
	{0xA321F2D7226895C7, 0xAFF72D52192B6A0D}, // 1e57
	{0xCBEA6F8CEB02BB39, 0x9BF4F8A69F764490}, // 1e58
	{0xFEE50B7025C36A08, 0x02F236D04753D5B4}, // 1e59
	{0x9F4F2726179A2245, 0x01D762422C946590}, // 1e60
	{0xC722F0EF9D80AAD6, 0x424D3AD2B7B97EF5}, // 1e61
	{0xF8EBAD2B84E0D58B, 0xD2E0898765A7DEB2}, // 1e62
	{0x9B934C3B330C8577, 0x63CC55F49F88EB2F}, // 1e63
	{0xC2781F49FFCFA6D5, 0x3CBF6B71C76B25FB}, // 1e64
}

// eiselLemire64 is Go's internal/strconv eiselLemire64 over pow10Table.
func eiselLemire64(man uint64, exp10 int, neg bool) (float64, bool) {
	if exp10 < pow10Min || exp10 > pow10Max {
		return 0, false
	}
	pow := pow10Table[exp10-pow10Min]
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
