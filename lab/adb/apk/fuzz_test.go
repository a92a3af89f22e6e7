package apk

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds arbitrary bytes to the binary-XML parser (an APK is
// untrusted input): it must not panic, and the manifests perflab writes
// itself must parse back to what was written. Run with
// go test ./lab/adb/apk -fuzz FuzzParse -fuzztime 30s.
func FuzzParse(f *testing.F) {
	f.Add(EncodeManifest("com.example.app", ".MainActivity", true), "com.example.app", ".MainActivity", true)
	f.Add(EncodeManifest("org.perflab.sim.feed", "org.perflab.sim.feed.Main", false), "org.perflab.sim.feed", "org.perflab.sim.feed.Main", false)
	f.Add([]byte{3, 0, 8, 0, 0, 0, 0, 0}, "a", ".A", true)
	f.Fuzz(func(t *testing.T, raw []byte, pkg, launcher string, utf8Pool bool) {
		Parse(raw) // arbitrary bytes: an error is fine, a panic is not
		if len(raw) > 8 {
			// Damaged copies of a real manifest reach deeper.
			good := EncodeManifest("com.example.app", ".MainActivity", utf8Pool)
			for i, c := range raw {
				good[(i*31+int(c))%len(good)] ^= c
			}
			Parse(good)
		}
		if pkg == "" || launcher == "" || !utf8.ValidString(pkg) || !utf8.ValidString(launcher) ||
			len(pkg) > 200 || len(launcher) > 200 || bytes.ContainsRune([]byte(pkg+launcher), 0) {
			return
		}
		want := launcher // a launcher inside the package is shortened to ".Name"
		if strings.HasPrefix(want, pkg+".") {
			want = want[len(pkg):]
		}
		m, err := Parse(EncodeManifest(pkg, launcher, utf8Pool))
		if err != nil || m.Package != pkg || m.Launcher != want {
			t.Fatalf("manifest of %q %q (utf8 %v) parses as %+v, %v", pkg, launcher, utf8Pool, m, err)
		}
	})
}
