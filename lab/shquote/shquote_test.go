package shquote

import (
	"os/exec"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain", "plain"},
		{"/data/local/tmp/a.apk", "/data/local/tmp/a.apk"},
		{"user@host:1,2+3=4%", "user@host:1,2+3=4%"},
		{"two words", "'two words'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
		{"a;rm -rf /", "'a;rm -rf /'"},
		{"*", "'*'"},
		{"`id`", "'`id`'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestQuoteThroughSh checks the quoted words survive a real POSIX shell
// unchanged.
func TestQuoteThroughSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, s := range []string{"", "a b", "it's", `"$x"\n`, "$(id)", "tab\there", "new\nline", "*?[a]", "~user", "é ü"} {
		out, err := exec.Command(sh, "-c", "printf %s "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if string(out) != s {
			t.Errorf("sh printed %q for Quote(%q) = %s", out, s, Quote(s))
		}
	}
}
