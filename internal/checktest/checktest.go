// Package checktest holds the test helper the device backends share to
// show that their lab.BuildChecker, lab.MetricChecker or
// lab.ControlsChecker and their Setup agree.
package checktest

import (
	"strings"
	"testing"
)

// Agree reports, as errors of t under name, unless the check's error
// (CheckBuilds', CheckMetrics' or CheckControls') and Setup's (setup) are
// both nil when want is "", or otherwise the same error containing want.
func Agree(t testing.TB, name string, check, setup error, want string) {
	t.Helper()
	if want == "" {
		if check != nil || setup != nil {
			t.Errorf("%s: check %v, Setup %v; want both nil", name, check, setup)
		}
		return
	}
	if check == nil || !strings.Contains(check.Error(), want) {
		t.Errorf("%s: check %v, want %q", name, check, want)
	}
	if setup == nil || check == nil || setup.Error() != check.Error() {
		t.Errorf("%s: Setup %v, check %v; want the same error", name, setup, check)
	}
}
