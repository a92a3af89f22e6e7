package cli

import (
	"reflect"
	"strings"
	"testing"
)

func TestOrderCommand(t *testing.T) {
	out, errOut, code := studyCmd(t, "order", "sim:pixel", "--experiment", "examples/sim-order-carryover.json", "--json")
	if code != exitRegression {
		t.Fatalf("carry-over: exit %d\n%s\n%s", code, out, errOut)
	}
	m := lastLine(t, out)
	if got := keys(m); !reflect.DeepEqual(got, []string{"alpha", "alpha_bonferroni", "order_matters", "tests"}) {
		t.Errorf("keys %v", got)
	}
	if m["order_matters"] != true || m["alpha"].(float64) != 0.05 || m["alpha_bonferroni"].(float64) != 0.025 {
		t.Errorf("carry-over: %v", m)
	}
	tests := m["tests"].([]any)
	if len(tests) != 2 {
		t.Fatalf("tests %v", tests)
	}
	for _, x := range tests {
		if got := keys(x); !reflect.DeepEqual(got, []string{"delta_pct", "name", "p", "red_flag"}) {
			t.Errorf("test keys %v", got)
		}
		if x.(map[string]any)["red_flag"] != true {
			t.Errorf("carry-over test without a red flag: %v", x)
		}
	}
	out, _, code = studyCmd(t, "order", "--experiment", "examples/sim-order-clean.json", "sim:pixel", "--runs", "8", "--quiet")
	if code != exitOK || !strings.Contains(out, "Order likely does not matter") || !strings.Contains(out, "8 repetitions") {
		t.Fatalf("clean: exit %d\n%s", code, out)
	}
}
