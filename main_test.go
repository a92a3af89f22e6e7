package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestDispatch(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string // in stdout+stderr
	}{
		{[]string{"help"}, 0, "Commands:"},
		{[]string{"help", "compare"}, 0, "perflab compare"},
		{[]string{"--version"}, 0, "perflab " + version},
		{[]string{"nosuch"}, 2, `unknown command "nosuch"`},
		// Flags with no command belong to the workbench.
		{[]string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"--device", "sim:pixel", "--help"}, 0, "Opens the workbench"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), tt.args, &out, &errb)
		all := out.String() + errb.String()
		if code != tt.code || !strings.Contains(all, tt.want) {
			t.Errorf("perflab %s: exit %d, want %d with %q; output:\n%s", strings.Join(tt.args, " "), code, tt.code, tt.want, all)
		}
	}
}
