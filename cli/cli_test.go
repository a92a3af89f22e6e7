package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// pkgDir is this package's directory: the tests run from the repository
// root (see TestMain) so that examples/ and the command lines in README.md
// read the same, and find their own testdata through pkgDir.
var pkgDir string

// binDir holds the perflab binary the tests run as a process
// (perflabBinary); TestMain makes and removes it.
var binDir string

func TestMain(m *testing.M) {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	pkgDir = wd
	if err := os.Chdir(".."); err != nil {
		panic(err)
	}
	// Governor crash records (see governor.Guard) stay out of the user's
	// state directory; tests that look at them set their own.
	state, err := os.MkdirTemp("", "perflab-cli-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	// perflabBinary builds the perflab binary here, removed after.
	binDir, err = os.MkdirTemp("", "perflab-bin-")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(state)
	os.RemoveAll(binDir)
	os.Exit(code)
}

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
		{[]string{"rn", "x.json"}, 2, `did you mean "run"? (perflab run x.json)`},
		{[]string{"comapre"}, 2, `did you mean "compare"?`},
		{[]string{"run", "x.json", "--headles"}, 2, "perflab run: did you mean --headless?"},
		{[]string{"compare", "--jsno", "a"}, 2, "perflab compare: did you mean --json?"},
		{[]string{"check", "sim:pixel", "--profil", "x"}, 2, "perflab check: did you mean --profile?"},
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
