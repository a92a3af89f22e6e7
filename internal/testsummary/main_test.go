package main

import (
	"strings"
	"testing"
)

// A stream as go test -json writes it: a passing package, a failing test
// with a passing and a failing subtest, a skipped test, a build failure.
const stream = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestFast"}
{"Action":"output","Package":"m/a","Test":"TestFast","Output":"=== RUN   TestFast\n"}
{"Action":"output","Package":"m/a","Test":"TestFast","Output":"    a_test.go:9: a log line of a passing test\n"}
{"Action":"output","Package":"m/a","Test":"TestFast","Output":"--- PASS: TestFast (0.50s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestFast","Elapsed":0.5}
{"Action":"run","Package":"m/a","Test":"TestSlow"}
{"Action":"output","Package":"m/a","Test":"TestSlow","Output":"--- PASS: TestSlow (12.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestSlow","Elapsed":12}
{"Action":"output","Package":"m/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestSkip","Elapsed":0}
{"Action":"output","Package":"m/a","Output":"PASS\n"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t12.6s\n"}
{"Action":"pass","Package":"m/a","Elapsed":12.6}
{"Action":"run","Package":"m/b","Test":"TestBroken"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"output","Package":"m/b","Test":"TestBroken/ok","Output":"--- PASS: TestBroken/ok (0.00s)\n"}
{"Action":"pass","Package":"m/b","Test":"TestBroken/ok","Elapsed":0}
{"Action":"output","Package":"m/b","Test":"TestBroken/bad","Output":"    b_test.go:7: want 2, got 3\n"}
{"Action":"output","Package":"m/b","Test":"TestBroken/bad","Output":"--- FAIL: TestBroken/bad (0.00s)\n"}
{"Action":"fail","Package":"m/b","Test":"TestBroken/bad","Elapsed":0}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"--- FAIL: TestBroken (3.25s)\n"}
{"Action":"fail","Package":"m/b","Test":"TestBroken","Elapsed":3.25}
{"Action":"output","Package":"m/b","Output":"FAIL\n"}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t3.3s\n"}
{"Action":"fail","Package":"m/b","Elapsed":3.3}
{"ImportPath":"m/c","Action":"build-output","Output":"c.go:3:1: syntax error\n"}
go: a line that is not JSON
`

func TestSummarize(t *testing.T) {
	var out strings.Builder
	if err := summarize(strings.NewReader(stream), &out, false, 2); err != nil {
		t.Fatal(err)
	}
	want := `ok  	m/a	12.6s
    b_test.go:7: want 2, got 3
--- FAIL: TestBroken/bad (0.00s)
--- FAIL: TestBroken (3.25s)
FAIL
FAIL	m/b	3.3s
c.go:3:1: syntax error
go: a line that is not JSON

2 slowest tests:
   12.00s  m/a  TestSlow
    3.25s  m/b  TestBroken
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	summarize(strings.NewReader(stream), &out, true, 10)
	for _, line := range []string{"a log line of a passing test", "=== RUN   TestFast", "PASS\n", "--- SKIP: TestSkip"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("-v: %q missing from\n%s", line, out.String())
		}
	}
	if !strings.Contains(out.String(), "3 slowest tests:") {
		t.Errorf("-v: want the 3 tests that ran, got\n%s", out.String())
	}
}
