package shell

import (
	"testing"
	"time"
	"unicode/utf8"

	"github.com/perflab/perflab/lab/shquote"
)

// FuzzLexParse feeds arbitrary command lines to the simulated shell's
// lexer and parser (adb shell input comes from any client): neither may
// panic. And every string quoted with shquote.Quote, as the adb backend
// quotes what it interpolates, must come out of the lexer as one word with
// exactly that text, $ and all unexpanded. Run with
// go test ./lab/simdevice/shell -fuzz FuzzLexParse -fuzztime 30s.
func FuzzLexParse(f *testing.F) {
	for _, s := range []string{
		"getprop ro.product.model; id -u",
		`su 0 sh -c 'echo 1 > /sys/x' && cat /sys/x || echo "no $HOME" 2>&1 | head -n 1`,
		"{ echo a; echo b; } > /tmp/f; (cd /; ls) >> log 2>/dev/null &",
		`echo it'\''s "a \"b\"" \$x # comment`,
		"if [ -f x ]; then echo y; fi", "echo $((1+2)) ${x:-y} `id`", "((", "'unterminated", `"`, "a |", "; ;",
	} {
		f.Add(s, "it's $HOME")
	}
	f.Fuzz(func(t *testing.T, line, lit string) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if toks, err := lex(line); err == nil {
				parse(toks)
			}
		}()
		select {
		case <-done:
		case <-time.After(time.Minute): // only catches a hang, however loaded the host
			t.Fatalf("lex and parse of %q still running after a minute", line)
		}
		if !utf8.ValidString(lit) {
			return
		}
		toks, err := lex("cat " + shquote.Quote(lit))
		if err != nil {
			t.Fatalf("lex(cat %s): %v", shquote.Quote(lit), err)
		}
		if len(toks) != 2 || toks[0].op != "" || toks[1].op != "" {
			t.Fatalf("cat %s lexes as %d tokens %+v, want 2 words", shquote.Quote(lit), len(toks), toks)
		}
		if got := toks[1].w.expand(func(string) string { return "EXPANDED" }); got != lit {
			t.Fatalf("%q quoted as %s lexes as %q", lit, shquote.Quote(lit), got)
		}
	})
}
