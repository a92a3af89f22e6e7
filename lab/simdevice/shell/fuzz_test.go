package shell

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/perflab/perflab/lab/shquote"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// FuzzLexParse feeds arbitrary command lines to the simulated shell's
// parser (mvdan.cc/sh in mksh mode; adb shell input comes from any
// client): it may not panic or hang. And every string quoted with
// shquote.Quote, as the adb backend quotes what it interpolates, must parse
// as one word with exactly that text, $ and all unexpanded. Run with
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
			parseLine(line)
		}()
		select {
		case <-done:
		case <-time.After(time.Minute): // only catches a hang, however loaded the host
			t.Fatalf("parse of %q still running after a minute", line)
		}
		if !utf8.ValidString(lit) || strings.ContainsRune(lit, 0) {
			return
		}
		line = "cat " + shquote.Quote(lit)
		file, err := parseLine(line)
		if err != nil {
			t.Fatalf("parse(%s): %v", line, err)
		}
		if len(file.Stmts) != 1 {
			t.Fatalf("%s parses as %d commands, want 1", line, len(file.Stmts))
		}
		call, ok := file.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) != 2 || len(file.Stmts[0].Redirs) != 0 {
			t.Fatalf("%s does not parse as one command with 2 words", line)
		}
		got, err := expand.Fields(&expand.Config{Env: expand.FuncEnviron(func(string) string { return "EXPANDED" })}, call.Args[1])
		if err != nil || len(got) != 1 || got[0] != lit {
			t.Fatalf("%q quoted as %s parses as %q (%v)", lit, shquote.Quote(lit), got, err)
		}
	})
}
