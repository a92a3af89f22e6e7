// Package elfsym names the addresses of ELF binaries that a profiler left
// unnamed: from the binary's own .symtab and .dynsym, from a separate
// debug file found by build ID (/usr/lib/debug/.build-id/xx/yyyy.debug)
// or by .gnu_debuglink, or from an unstripped copy in a build tree given
// as a symbols folder (simpleperf's --symfs idea). What stays unknown is
// named BINARY+0xADDR, never a bare address.
package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// DebugRoot is where distributions install debug files (Debian's -dbgsym
// packages, Fedora's debuginfo).
var DebugRoot = "/usr/lib/debug"

// Resolver names addresses of binaries, each binary read once. Its
// methods are safe for concurrent use.
type Resolver struct {
	// Symbols is a folder holding unstripped copies of the binaries or
	// their debug files (a build tree), searched first: DIR/<path>,
	// DIR/<base name>, DIR/.build-id/xx/yyyy.debug, then any file under
	// DIR with the binary's build ID.
	Symbols string

	mu    sync.Mutex
	bins  map[string]*Binary
	byID  map[string]string // build ID → file under Symbols
	index bool              // byID built
}

// Binary is one binary's symbols.
type Binary struct {
	Path    string
	BuildID string
	// From says where the symbols came from (the binary, a debug file);
	// empty when none were found.
	From  string
	loads []elf.ProgHeader // PT_LOAD segments, to turn file offsets into addresses
	syms  []sym            // by address
}

type sym struct {
	addr, size uint64
	name       string
}

// Open returns path's symbols (cached); a binary that cannot be read
// gives a Binary without symbols.
func (r *Resolver) Open(path string) *Binary {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.bins[path]; ok {
		return b
	}
	if r.bins == nil {
		r.bins = map[string]*Binary{}
	}
	b := r.load(path)
	r.bins[path] = b
	return b
}

func (r *Resolver) load(path string) *Binary {
	b := &Binary{Path: path}
	f, err := elf.Open(path)
	if err != nil {
		// Not on this host: perhaps in the symbols folder.
		if alt := r.inSymbols(path, ""); alt != "" {
			if f, err = elf.Open(alt); err != nil {
				return b
			}
		} else {
			return b
		}
	}
	defer f.Close()
	b.BuildID = BuildID(f)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p.ProgHeader)
		}
	}
	// The symbols folder first (an unstripped copy), then the binary
	// itself, then its debug file.
	var cands []string
	if alt := r.inSymbols(path, b.BuildID); alt != "" {
		cands = append(cands, alt)
	}
	cands = append(cands, "")
	cands = append(cands, debugFiles(f, path, b.BuildID, r.Symbols)...)
	for _, c := range cands {
		var syms []sym
		full := false
		if c == "" {
			syms, full = funcSyms(f)
		} else if df, err := elf.Open(c); err == nil {
			if id := BuildID(df); b.BuildID == "" || id == "" || id == b.BuildID {
				syms, full = funcSyms(df)
			}
			df.Close()
		}
		if len(syms) > len(b.syms) {
			b.syms = syms
			b.From = c
			if c == "" {
				b.From = path
			}
		}
		if full {
			break // a full symbol table: no need to look further
		}
	}
	return b
}

// inSymbols finds path's copy in the symbols folder: DIR/path, DIR/base,
// DIR/.build-id/xx/yyyy.debug, or any ELF file under DIR with build ID id.
func (r *Resolver) inSymbols(path, id string) string {
	if r.Symbols == "" {
		return ""
	}
	for _, c := range []string{filepath.Join(r.Symbols, path), filepath.Join(r.Symbols, filepath.Base(path))} {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			if id == "" || FileBuildID(c) == id {
				return c
			}
		}
	}
	if id == "" {
		return ""
	}
	if len(id) > 2 {
		c := filepath.Join(r.Symbols, ".build-id", id[:2], id[2:]+".debug")
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	if !r.index {
		r.index = true
		r.byID = map[string]string{}
		n := 0
		filepath.WalkDir(r.Symbols, func(p string, d os.DirEntry, err error) error {
			if err != nil || n > 20000 {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				n++
				if x := FileBuildID(p); x != "" {
					if _, ok := r.byID[x]; !ok {
						r.byID[x] = p
					}
				}
			}
			return nil
		})
	}
	return r.byID[id]
}

// debugFiles are the places a separate debug file of the binary at path
// may be: by build ID under DebugRoot (and the symbols folder), then by
// .gnu_debuglink beside the binary, in its .debug folder and under
// DebugRoot.
func debugFiles(f *elf.File, path, id, symbols string) []string {
	var out []string
	if len(id) > 2 {
		out = append(out, filepath.Join(DebugRoot, ".build-id", id[:2], id[2:]+".debug"))
	}
	if s := f.Section(".gnu_debuglink"); s != nil {
		if data, err := s.Data(); err == nil {
			if i := bytes.IndexByte(data, 0); i > 0 {
				name := string(data[:i])
				dir := filepath.Dir(path)
				out = append(out, filepath.Join(dir, name), filepath.Join(dir, ".debug", name), filepath.Join(DebugRoot, dir, name))
				if symbols != "" {
					out = append(out, filepath.Join(symbols, name))
				}
			}
		}
	}
	return out
}

// BuildID is the hex of the file's GNU build ID note, "" without one.
func BuildID(f *elf.File) string {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for len(data) >= 12 {
			nsz := f.ByteOrder.Uint32(data[0:4])
			dsz := f.ByteOrder.Uint32(data[4:8])
			typ := f.ByteOrder.Uint32(data[8:12])
			nEnd := 12 + align4(nsz)
			dEnd := nEnd + align4(dsz)
			if uint64(dEnd) > uint64(len(data)) {
				break
			}
			if typ == 3 && nsz == 4 && string(data[12:15]) == "GNU" { // NT_GNU_BUILD_ID
				return hex.EncodeToString(data[nEnd : nEnd+int(dsz)])
			}
			data = data[dEnd:]
		}
	}
	return ""
}

func align4(n uint32) int { return int((n + 3) &^ 3) }

// FileBuildID is the build ID of the ELF file at path, "" when none.
func FileBuildID(path string) string {
	var magic [4]byte
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	_, err = fh.Read(magic[:])
	fh.Close()
	if err != nil || string(magic[:]) != elf.ELFMAG {
		return ""
	}
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	return BuildID(f)
}

// funcSyms are the file's function symbols, .symtab and .dynsym, by
// address; full says .symtab had some (not only the exported ones).
func funcSyms(f *elf.File) (out []sym, full bool) {
	seen := map[uint64]bool{}
	for k, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		ss, err := get()
		if err != nil {
			continue
		}
		for _, s := range ss {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Section == elf.SHN_UNDEF || seen[s.Value] {
				continue
			}
			full = full || k == 0
			seen[s.Value] = true
			name, _, _ := strings.Cut(s.Name, "@") // versioned dynamic symbols
			out = append(out, sym{addr: s.Value, size: s.Size, name: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out, full
}

// Addr turns a file offset in the binary (what perf reports for a frame
// of a mapped file) into the address its symbols use; ok false when no
// loaded segment holds it.
func (b *Binary) Addr(fileOff uint64) (uint64, bool) {
	for _, p := range b.loads {
		if fileOff >= p.Off && fileOff < p.Off+p.Filesz {
			return fileOff - p.Off + p.Vaddr, true
		}
	}
	return fileOff, len(b.loads) == 0
}

// Name is the function holding address addr (the symbols' address
// space), "" when no symbol does.
func (b *Binary) Name(addr uint64) string {
	i := sort.Search(len(b.syms), func(i int) bool { return b.syms[i].addr > addr }) - 1
	if i < 0 {
		return ""
	}
	s := b.syms[i]
	if s.size > 0 && addr >= s.addr+s.size {
		return ""
	}
	if s.size == 0 && i+1 == len(b.syms) {
		return ""
	}
	return s.name
}

// Unknown is how an address no symbol names is shown: the binary's base
// name and the address, gzip+0xcc5c.
func Unknown(path string, addr uint64) string {
	base := filepath.Base(path)
	if path == "" {
		base = "?"
	}
	return fmt.Sprintf("%s+0x%x", base, addr)
}

// Unsymbolized reports whether name is one Unknown made (or a bare
// address "0x…", as older profiles have) and returns the binary's base
// name ("" for a bare address).
func Unsymbolized(name string) (bin string, ok bool) {
	i := strings.LastIndex(name, "+0x")
	if i < 0 {
		if strings.HasPrefix(name, "0x") && isHex(name[2:]) {
			return "", true
		}
		return "", false
	}
	if i == 0 || !isHex(name[i+3:]) || strings.ContainsAny(name[:i], " ()<>,:") {
		return "", false
	}
	return name[:i], true
}

// Group is the row of the per-function table that an unsymbolized frame
// of a binary is counted in: "gzip (unsymbolized)"; other names are
// their own row.
func Group(name string) string {
	bin, ok := Unsymbolized(name)
	switch {
	case !ok:
		return name
	case bin == "":
		return "(unsymbolized)"
	}
	return bin + " (unsymbolized)"
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
