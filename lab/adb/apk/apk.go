// Package apk reads what perflab needs from an Android APK: the package
// name and launcher activity in its binary AndroidManifest.xml.
package apk

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
)

// Manifest is what perflab needs from an APK's AndroidManifest.xml.
type Manifest struct {
	Package string
	// Launcher is the activity with the MAIN action and LAUNCHER category,
	// as written in the manifest (".MainActivity" or a full class name).
	Launcher string
}

// Read reads the package name and launcher activity from the
// binary AndroidManifest.xml inside an APK. (No APK library is available
// to this module, so this reads Android's binary XML format directly: a
// string pool and start/end element chunks.)
func Read(apk string) (Manifest, error) {
	zr, err := zip.OpenReader(apk)
	if err != nil {
		return Manifest{}, fmt.Errorf("%s: not an APK (zip): %w", apk, err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != "AndroidManifest.xml" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return Manifest{}, fmt.Errorf("%s: %w", apk, err)
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, 16<<20))
		if err != nil {
			return Manifest{}, fmt.Errorf("%s: AndroidManifest.xml: %w", apk, err)
		}
		m, err := Parse(data)
		if err != nil {
			return Manifest{}, fmt.Errorf("%s: AndroidManifest.xml: %w", apk, err)
		}
		return m, nil
	}
	return Manifest{}, fmt.Errorf("%s: no AndroidManifest.xml inside", apk)
}

// Binary XML chunk types.
const (
	chunkStringPool   = 0x0001
	chunkXML          = 0x0003
	chunkStartElement = 0x0102
	chunkEndElement   = 0x0103
	utf8Flag          = 1 << 8
	typeString        = 0x03
	attrNameRes       = 0x01010003 // android:name
)

// Parse parses a compiled AndroidManifest.xml.
func Parse(b []byte) (Manifest, error) {
	le := binary.LittleEndian
	if len(b) < 8 || le.Uint16(b) != chunkXML {
		return Manifest{}, errors.New("not Android binary XML")
	}
	var x manifestReader
	off := int(le.Uint16(b[2:]))
	for off+8 <= len(b) {
		typ, hsz, size := le.Uint16(b[off:]), int(le.Uint16(b[off+2:])), int(le.Uint32(b[off+4:]))
		if size < 8 || off+size > len(b) {
			return x.m, fmt.Errorf("chunk at %d: bad size %d", off, size)
		}
		if err := x.chunk(typ, hsz, b[off:off+size], off); err != nil {
			return x.m, err
		}
		off += size
	}
	m := x.m
	if m.Package == "" {
		return m, errors.New("no package attribute on <manifest>")
	}
	if strings.HasPrefix(m.Launcher, m.Package+".") {
		m.Launcher = m.Launcher[len(m.Package):]
	}
	return m, nil
}

// manifestReader is Parse's state as it reads the chunks: the string pool,
// the resource map, the elements open (each with the activity it is in),
// and whether the intent filter open has the launcher's action and
// category.
type manifestReader struct {
	m                Manifest
	pool             []string
	resMap           []uint32
	stack            []manifestFrame
	action, category bool
}

// manifestFrame is an element open: its name and the activity it is in.
type manifestFrame struct{ name, activity string }

// chunk reads one chunk c (of type typ, header size hsz) at offset off.
func (x *manifestReader) chunk(typ uint16, hsz int, c []byte, off int) error {
	le := binary.LittleEndian
	switch typ {
	case chunkStringPool:
		p, err := parsePool(c)
		if err != nil {
			return err
		}
		x.pool = p
	case 0x0180: // resource map: attribute name → resource ID
		for i := hsz; i+4 <= len(c); i += 4 {
			x.resMap = append(x.resMap, le.Uint32(c[i:]))
		}
	case chunkStartElement:
		if len(c) < hsz+20 {
			return fmt.Errorf("element at %d: truncated", off)
		}
		name, attrs, err := x.element(c[hsz:])
		if err != nil {
			return err
		}
		x.start(name, attrs)
	case chunkEndElement:
		if len(x.stack) == 0 {
			return fmt.Errorf("unbalanced end element at %d", off)
		}
		x.end()
	}
	return nil
}

// element reads a start element's name and attributes (android:name as
// "name", through the resource map).
func (x *manifestReader) element(ext []byte) (string, map[string]string, error) {
	le := binary.LittleEndian
	name := str(x.pool, le.Uint32(ext[4:]))
	attrStart, attrSize, attrCount := int(le.Uint16(ext[8:])), int(le.Uint16(ext[10:])), int(le.Uint16(ext[12:]))
	attrs := map[string]string{}
	for i := 0; i < attrCount; i++ {
		a := attrStart + i*attrSize
		if a+20 > len(ext) {
			return name, nil, fmt.Errorf("element %s: attribute %d out of range", name, i)
		}
		ni := le.Uint32(ext[a+4:])
		an := str(x.pool, ni)
		if int(ni) < len(x.resMap) && x.resMap[ni] == attrNameRes {
			an = "name"
		}
		v := str(x.pool, le.Uint32(ext[a+8:]))
		if v == "" && ext[a+15] == typeString {
			v = str(x.pool, le.Uint32(ext[a+16:]))
		}
		attrs[an] = v
	}
	return name, attrs, nil
}

// start opens an element: the manifest's package, an activity, an intent
// filter and the launcher's action and category in it.
func (x *manifestReader) start(name string, attrs map[string]string) {
	f := manifestFrame{name: name}
	if len(x.stack) > 0 {
		f.activity = x.stack[len(x.stack)-1].activity
	}
	switch name {
	case "manifest":
		x.m.Package = attrs["package"]
	case "activity", "activity-alias":
		f.activity = attrs["name"]
	case "intent-filter":
		x.action, x.category = false, false
	case "action":
		x.action = x.action || attrs["name"] == "android.intent.action.MAIN"
	case "category":
		x.category = x.category || attrs["name"] == "android.intent.category.LAUNCHER"
	}
	x.stack = append(x.stack, f)
}

// end closes an element: the first intent filter with the launcher's
// action and category names the launcher activity.
func (x *manifestReader) end() {
	top := x.stack[len(x.stack)-1]
	x.stack = x.stack[:len(x.stack)-1]
	if top.name == "intent-filter" && x.action && x.category && x.m.Launcher == "" && top.activity != "" {
		x.m.Launcher = top.activity
	}
}

func str(pool []string, i uint32) string {
	if int64(i) < int64(len(pool)) {
		return pool[i]
	}
	return ""
}

func parsePool(c []byte) ([]string, error) {
	le := binary.LittleEndian
	if len(c) < 28 {
		return nil, errors.New("string pool: truncated header")
	}
	hsz := int(le.Uint16(c[2:]))
	n, flags, start := int(le.Uint32(c[8:])), le.Uint32(c[16:]), int(le.Uint32(c[20:]))
	if hsz+4*n > len(c) || start > len(c) {
		return nil, errors.New("string pool: offsets out of range")
	}
	out := make([]string, n)
	for i := 0; i < n; i++ {
		p := start + int(le.Uint32(c[hsz+4*i:]))
		if p >= len(c) {
			return nil, fmt.Errorf("string pool: string %d out of range", i)
		}
		if flags&utf8Flag != 0 {
			// u8 char count (1–2 bytes), u8 byte count (1–2 bytes), bytes.
			skip := func() int {
				if c[p]&0x80 != 0 {
					v := int(c[p]&0x7f)<<8 | int(c[p+1])
					p += 2
					return v
				}
				v := int(c[p])
				p++
				return v
			}
			skip()
			l := skip()
			if p+l > len(c) {
				return nil, fmt.Errorf("string pool: string %d truncated", i)
			}
			out[i] = string(c[p : p+l])
			continue
		}
		l := int(le.Uint16(c[p:]))
		p += 2
		if l&0x8000 != 0 {
			l = (l&0x7fff)<<16 | int(le.Uint16(c[p:]))
			p += 2
		}
		if p+2*l > len(c) {
			return nil, fmt.Errorf("string pool: string %d truncated", i)
		}
		u := make([]uint16, l)
		for j := range u {
			u[j] = le.Uint16(c[p+2*j:])
		}
		out[i] = string(utf16.Decode(u))
	}
	return out, nil
}

// ReadBytes reads the manifest of an APK held in memory.
func ReadBytes(data []byte) (Manifest, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return Manifest{}, fmt.Errorf("not an APK (zip): %w", err)
	}
	f, err := zr.Open("AndroidManifest.xml")
	if err != nil {
		return Manifest{}, errors.New("no AndroidManifest.xml inside")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return Manifest{}, err
	}
	return Parse(b)
}
