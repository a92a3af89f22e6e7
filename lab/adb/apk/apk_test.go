package apk

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeAPK(t *testing.T, manifestXML []byte) string {
	p := filepath.Join(t.TempDir(), "app.apk")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, data := range map[string][]byte{"AndroidManifest.xml": manifestXML, "classes.dex": []byte("dex\n035\x00")} {
		w, _ := zw.Create(name)
		w.Write(data)
	}
	zw.Close()
	f.Close()
	return p
}

func TestRead(t *testing.T) {
	for _, utf8 := range []bool{false, true} {
		x := &axml{}
		manifest(x, "name", "com.example.app", ".MainActivity")
		m, err := Read(writeAPK(t, x.bytes(utf8)))
		if err != nil || m.Package != "com.example.app" || m.Launcher != ".MainActivity" {
			t.Errorf("utf8=%v: %+v %v", utf8, m, err)
		}
	}
	// Obfuscated attribute names are found through the resource map.
	x := &axml{}
	x.s("")
	x.res = []uint32{attrNameRes}
	manifest(x, "", "com.example.app", "com.example.app.MainActivity")
	if m, err := Parse(x.bytes(false)); err != nil || m.Launcher != ".MainActivity" {
		t.Errorf("resource-mapped name: %+v %v", m, err)
	}
	// Broken inputs name the problem.
	if _, err := Read(writeAPK(t, []byte("<manifest/>"))); err == nil || !strings.Contains(err.Error(), "not Android binary XML") {
		t.Errorf("text manifest: %v", err)
	}
	p := filepath.Join(t.TempDir(), "x.apk")
	os.WriteFile(p, []byte("not a zip"), 0o644)
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "not an APK") {
		t.Errorf("not a zip: %v", err)
	}
	b := EncodeManifest("com.example.app", ".MainActivity", false)
	if _, err := Parse(b[:len(b)-7]); err == nil {
		t.Error("truncated manifest parsed")
	}
}

func TestWriteAPKRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := WriteAPK(&b, "org.perflab.sim.notes.p3", ".MainActivity"); err != nil {
		t.Fatal(err)
	}
	m, err := ReadBytes(b.Bytes())
	if err != nil || m.Package != "org.perflab.sim.notes.p3" || m.Launcher != ".MainActivity" {
		t.Errorf("%+v %v", m, err)
	}
}
