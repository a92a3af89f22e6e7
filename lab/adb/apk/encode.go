package apk

import (
	"archive/zip"
	"encoding/binary"
	"io"
	"unicode/utf16"
)

// axml writes Android binary XML, enough for the manifests aapt compiles.
type axml struct {
	strs []string
	idx  map[string]uint32
	body []byte
	res  []uint32 // resource IDs of the first strings (attribute names)
}

func (x *axml) s(v string) uint32 {
	if x.idx == nil {
		x.idx = map[string]uint32{}
	}
	if i, ok := x.idx[v]; ok {
		return i
	}
	x.strs = append(x.strs, v)
	x.idx[v] = uint32(len(x.strs) - 1)
	return x.idx[v]
}

func u16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func u32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

func (x *axml) start(name string, attrs ...string) {
	c := u16(nil, chunkStartElement)
	c = u16(c, 16)
	c = u32(c, uint32(16+20+20*len(attrs)/2))
	c = u32(c, 1)
	c = u32(c, 0xffffffff)
	c = u32(c, 0xffffffff)
	c = u32(c, x.s(name))
	c = u16(c, 20)
	c = u16(c, 20)
	c = u16(c, uint16(len(attrs)/2))
	c = u16(c, 0)
	c = u16(c, 0)
	c = u16(c, 0)
	for i := 0; i < len(attrs); i += 2 {
		c = u32(c, 0xffffffff)
		c = u32(c, x.s(attrs[i]))
		c = u32(c, 0xffffffff) // no raw value: the typed value holds it
		c = u16(c, 8)
		c = append(c, 0, typeString)
		c = u32(c, x.s(attrs[i+1]))
	}
	x.body = append(x.body, c...)
}

func (x *axml) end(name string) {
	c := u16(nil, chunkEndElement)
	c = u16(c, 16)
	c = u32(c, 24)
	c = u32(c, 1)
	c = u32(c, 0xffffffff)
	c = u32(c, 0xffffffff)
	c = u32(c, x.s(name))
	x.body = append(x.body, c...)
}

func (x *axml) bytes(utf8 bool) []byte {
	var data []byte
	var offs []uint32
	for _, s := range x.strs {
		offs = append(offs, uint32(len(data)))
		if utf8 {
			data = append(data, byte(len([]rune(s))), byte(len(s)))
			data = append(data, s...)
			data = append(data, 0)
		} else {
			u := utf16.Encode([]rune(s))
			data = u16(data, uint16(len(u)))
			for _, r := range u {
				data = u16(data, r)
			}
			data = u16(data, 0)
		}
	}
	for len(data)%4 != 0 {
		data = append(data, 0)
	}
	var flags uint32
	if utf8 {
		flags = utf8Flag
	}
	pool := u16(nil, chunkStringPool)
	pool = u16(pool, 28)
	pool = u32(pool, uint32(28+4*len(offs)+len(data)))
	pool = u32(pool, uint32(len(offs)))
	pool = u32(pool, 0)
	pool = u32(pool, flags)
	pool = u32(pool, uint32(28+4*len(offs)))
	pool = u32(pool, 0)
	for _, o := range offs {
		pool = u32(pool, o)
	}
	pool = append(pool, data...)
	var rm []byte
	if len(x.res) > 0 {
		rm = u16(nil, 0x0180)
		rm = u16(rm, 8)
		rm = u32(rm, uint32(8+4*len(x.res)))
		for _, r := range x.res {
			rm = u32(rm, r)
		}
	}
	out := u16(nil, chunkXML)
	out = u16(out, 8)
	out = u32(out, uint32(8+len(pool)+len(rm)+len(x.body)))
	out = append(out, pool...)
	out = append(out, rm...)
	return append(out, x.body...)
}

func manifest(x *axml, nameAttr, pkg, launcher string) {
	x.start("manifest", "package", pkg, "versionCode", "7")
	x.start("application", "label", "Example")
	x.start("activity", nameAttr, "com.example.app.SettingsActivity")
	x.start("intent-filter")
	x.start("action", nameAttr, "android.intent.action.VIEW")
	x.end("action")
	x.end("intent-filter")
	x.end("activity")
	x.start("activity", nameAttr, launcher)
	x.start("intent-filter")
	x.start("action", nameAttr, "android.intent.action.MAIN")
	x.end("action")
	x.start("category", nameAttr, "android.intent.category.LAUNCHER")
	x.end("category")
	x.end("intent-filter")
	x.end("activity")
	x.end("application")
	x.end("manifest")
}

// EncodeManifest compiles a minimal AndroidManifest.xml for pkg with one
// launcher activity (and one other activity), in Android's binary XML with a
// UTF-16 or UTF-8 string pool, as aapt would. Tests and the simulated phone
// use it to make APKs.
func EncodeManifest(pkg, launcher string, utf8 bool) []byte {
	x := &axml{}
	manifest(x, "name", pkg, launcher)
	return x.bytes(utf8)
}

// WriteAPK writes a minimal APK (a zip with the binary manifest and a stub
// classes.dex) for pkg and launcher.
func WriteAPK(w io.Writer, pkg, launcher string) error {
	zw := zip.NewWriter(w)
	for _, f := range []struct {
		name string
		data []byte
	}{{"AndroidManifest.xml", EncodeManifest(pkg, launcher, false)}, {"classes.dex", []byte("dex\n035\x00")}} {
		fw, err := zw.Create(f.name)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.data); err != nil {
			return err
		}
	}
	return zw.Close()
}
