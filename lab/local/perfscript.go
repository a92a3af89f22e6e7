package local

import (
	"strconv"
	"strings"

	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
)

// frame parses one frame line of perf script, "ADDR SYMBOL+OFF (DSO)":
// the frame's name (perf's, else from the binary's symbols or debug file,
// else BINARY+0xADDR, counted in named and unknown) and its address in
// its mapping; ok is false for a frame with neither a symbol nor a binary.
func (maps *perfMaps) frame(s string, res *elfsym.Resolver, named, unknown *int) (sym string, fr lab.Frame, ok bool) {
	addrText, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimSpace(rest)
	dso := ""
	if strings.HasSuffix(rest, ")") {
		if i := strings.LastIndex(rest, " ("); i >= 0 {
			dso, rest = rest[i+2:len(rest)-1], strings.TrimSpace(rest[:i])
		} else if strings.HasPrefix(rest, "(") {
			dso, rest = rest[1:len(rest)-1], ""
		}
	}
	sym = rest
	if i := strings.LastIndex(sym, "+0x"); i > 0 {
		sym = sym[:i] // symbol+offset
	}
	if sym == "[unknown]" {
		sym = ""
	}
	if dso == "[unknown]" {
		dso = ""
	}
	if sym == "" && dso == "" {
		return "", lab.Frame{}, false
	}
	off, _ := strconv.ParseUint(addrText, 16, 64)
	fr = lab.Frame{Addr: off}
	mi := maps.byFile[dso]
	if mi > 0 {
		m := maps.list[mi-1]
		fr = lab.Frame{Addr: m.Start + off - m.Offset, Mapping: mi}
		if _, seen := maps.named[mi]; !seen {
			maps.named[mi] = true
		}
	}
	if sym == "" {
		b := res.Open(dso)
		vaddr, _ := b.Addr(off)
		if sym = b.Name(vaddr); sym != "" {
			*named++
		} else {
			sym = elfsym.Unknown(dso, vaddr)
			*unknown++
			if mi > 0 {
				maps.named[mi] = false
			}
		}
	}
	return sym, fr, true
}
