package analysis

import (
	"fmt"
	"strings"
	"testing"
)

// TestStabilityReasonsShowTheComparison: a value just over its limit is
// printed with the digits that show it over (issue 29: "coefficient of
// variation 2.0% above 2.0%").
func TestStabilityReasonsShowTheComparison(t *testing.T) {
	check := func(x, limit float64, dec int, wantX, wantL string) {
		t.Helper()
		if gx, gl := apart(x, limit, dec); gx != wantX || gl != wantL {
			t.Errorf("apart(%g, %g, %d) = %s, %s; want %s, %s", x, limit, dec, gx, gl, wantX, wantL)
		}
	}
	check(13.04, 2, 1, "13.0", "2.0")
	check(2.04, 2, 1, "2.04", "2.00")
	check(0.5004, 0.5, 2, "0.5004", "0.5000")

	var ss []StabilitySample
	for i := range 30 {
		ss = append(ss, StabilitySample{T: float64(i), MFLOPS: 1000 + 20.4*float64(1-2*(i%2))})
	}
	opt := DefaultStabilityOptions()
	cv := float64(StabilityOf(ss, opt).CV)
	opt.MaxCV = cv - 0.0002 // over by 0.02 points: the same to one decimal
	st := StabilityOf(ss, opt)
	want := fmt.Sprintf("coefficient of variation %.2f%% above %.2f%%", cv*100, opt.MaxCV*100)
	if got := strings.Join(st.Reasons, "; "); !strings.Contains(got, want) {
		t.Errorf("reasons %q, want %q", got, want)
	}
}
