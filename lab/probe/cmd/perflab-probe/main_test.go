package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestProgramPrintsSamples(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-duration", "400ms", "-interval", "200ms", "-size", "64"}, &out, &errb)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], `"mflops":`) {
		t.Errorf("code %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"-interval", "0"}, &out, &errb); code != 2 {
		t.Errorf("bad flags: code %d", code)
	}
}
