package wire

import (
	"bytes"
	"strings"
	"testing"
)

func TestMessageRoundTripAndChecks(t *testing.T) {
	var b bytes.Buffer
	m := Message{Cmd: CmdWRTE, Arg0: 3, Arg1: 9, Data: []byte("hello")}
	if err := WriteMessage(&b, m); err != nil {
		t.Fatal(err)
	}
	raw := append([]byte(nil), b.Bytes()...)
	got, err := ReadMessage(&b, 1024)
	if err != nil || got.Cmd != CmdWRTE || got.Arg0 != 3 || got.Arg1 != 9 || string(got.Data) != "hello" {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if got.String() != "WRTE(3, 9, 5 bytes)" {
		t.Errorf("String() = %q", got.String())
	}
	bad := append([]byte(nil), raw...)
	bad[20] ^= 1
	if _, err := ReadMessage(bytes.NewReader(bad), 1024); err == nil || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("bad magic: %v", err)
	}
	if _, err := ReadMessage(bytes.NewReader(raw), 4); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized payload: %v", err)
	}
	if _, err := ReadMessage(bytes.NewReader(raw[:27]), 1024); err == nil {
		t.Error("truncated payload read without error")
	}
}

func TestShellPacketsAndStat2(t *testing.T) {
	b := AppendShellPacket(nil, ShellStdout, []byte("out"))
	b = AppendShellPacket(b, ShellExit, []byte{7})
	r := bytes.NewReader(b)
	for _, want := range []struct {
		id   byte
		data string
	}{{ShellStdout, "out"}, {ShellExit, "\x07"}} {
		id, data, err := ReadShellPacket(r, 100)
		if err != nil || id != want.id || string(data) != want.data {
			t.Fatalf("packet %d %q %v, want %d %q", id, data, err, want.id, want.data)
		}
	}
	s := Stat2{Mode: 0o100755, Size: 1 << 33, Mtime: 1772442000, Ino: 42}
	enc := AppendStat2(nil, SyncSTA2, s)
	if len(enc) != Stat2Size || string(enc[:4]) != "STA2" {
		t.Fatalf("encoded %d bytes", len(enc))
	}
	back, err := ParseStat2(enc[4:])
	if err != nil || back != s {
		t.Errorf("stat2 round trip %+v %v", back, err)
	}
}

func TestStatusAndHexStrings(t *testing.T) {
	if err := ReadStatus(strings.NewReader("OKAY")); err != nil {
		t.Error(err)
	}
	err := ReadStatus(strings.NewReader("FAIL000edevice offline"))
	if err == nil || !strings.Contains(err.Error(), "device offline") {
		t.Errorf("FAIL: %v", err)
	}
	if got := string(AppendRequest(nil, "host:version")); got != "000chost:version" {
		t.Errorf("request %q", got)
	}
	s, err := ReadHexString(bytes.NewReader(AppendHexString(nil, "abc")))
	if err != nil || s != "abc" {
		t.Errorf("hex string %q %v", s, err)
	}
}
