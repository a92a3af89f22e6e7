package wire

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
)

// The fuzz targets feed arbitrary bytes, as a broken or hostile peer could
// send them, to every reader: none may panic or allocate past its limit,
// and whatever a reader accepts must encode back to the bytes it read.
// Run one with e.g. go test ./lab/adb/wire -fuzz FuzzReadMessage -fuzztime 30s.

func FuzzReadMessage(f *testing.F) {
	var b bytes.Buffer
	WriteMessage(&b, Message{Cmd: CmdCNXN, Arg0: Version, Arg1: MaxPayload, Data: []byte("device::ro.product.name=x;features=shell_v2")})
	f.Add(b.Bytes())
	b.Reset()
	WriteMessage(&b, Message{Cmd: CmdOKAY, Arg0: 1, Arg1: 2})
	f.Add(b.Bytes())
	f.Add([]byte("CNXN"))
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 4096
		m, err := ReadMessage(bytes.NewReader(in), max)
		if err != nil {
			return
		}
		if len(m.Data) > max {
			t.Fatalf("payload of %d bytes past the limit %d", len(m.Data), max)
		}
		var out bytes.Buffer
		if err := WriteMessage(&out, m); err != nil {
			t.Fatal(err)
		}
		enc := out.Bytes()
		// The checksum (bytes 16-20) is recomputed; everything else must
		// be what was read.
		if !bytes.Equal(enc[:16], in[:16]) || !bytes.Equal(enc[20:], in[20:len(enc)]) {
			t.Fatalf("read %v from % x, which encodes as % x", m, in[:len(enc)], enc)
		}
	})
}

func FuzzReadShellPacket(f *testing.F) {
	f.Add(AppendShellPacket(nil, ShellStdout, []byte("hello\n")))
	f.Add(AppendShellPacket(nil, ShellExit, []byte{3}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 4096
		id, data, err := ReadShellPacket(bytes.NewReader(in), max)
		if err != nil {
			return
		}
		if len(data) > max {
			t.Fatalf("packet of %d bytes past the limit %d", len(data), max)
		}
		if enc := AppendShellPacket(nil, id, data); !bytes.Equal(enc, in[:len(enc)]) {
			t.Fatalf("read %d %q from % x, which encodes as % x", id, data, in[:len(enc)], enc)
		}
	})
}

func FuzzReadSyncHeader(f *testing.F) {
	f.Add(AppendSync(nil, SyncDATA, 5, []byte("hello")))
	f.Add(AppendStat2(nil, SyncSTA2, Stat2{Mode: 0o100644, Size: 12}))
	f.Fuzz(func(t *testing.T, in []byte) {
		id, n, err := ReadSyncHeader(bytes.NewReader(in))
		if err != nil {
			return
		}
		if enc := AppendSync(nil, id, n, nil); !bytes.Equal(enc, in[:8]) {
			t.Fatalf("read %q %d from % x, which encodes as % x", id, n, in[:8], enc)
		}
		if id == SyncSTA2 && len(in) >= Stat2Size {
			s, err := ParseStat2(in[4:Stat2Size])
			if err != nil {
				t.Fatal(err)
			}
			if enc := AppendStat2(nil, id, s); !bytes.Equal(enc, in[:Stat2Size]) {
				t.Fatalf("STA2 %+v from % x encodes as % x", s, in[:Stat2Size], enc)
			}
		}
	})
}

func FuzzReadHexStringAndStatus(f *testing.F) {
	f.Add(AppendHexString(nil, "device::features=shell_v2"))
	f.Add([]byte("FAIL0005error"))
	f.Add([]byte("OKAY"))
	f.Add([]byte("00zz"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if s, err := ReadHexString(bytes.NewReader(in)); err == nil {
			n, perr := strconv.ParseUint(string(in[:4]), 16, 32)
			if perr != nil || int(n) != len(s) || s != string(in[4:4+n]) {
				t.Fatalf("read %q from %q", s, in)
			}
		}
		err := ReadStatus(bytes.NewReader(in))
		switch {
		case err == nil && !bytes.HasPrefix(in, []byte("OKAY")):
			t.Fatalf("status OK from %q", in)
		case errors.Is(err, ErrFail) && !bytes.HasPrefix(in, []byte("FAIL")):
			t.Fatalf("FAIL from %q", in)
		}
	})
}
