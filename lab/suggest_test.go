package lab

import (
	"strings"
	"testing"
)

func TestCheckMetricName(t *testing.T) {
	local := []string{"wall_ms", "user_ms", "sys_ms", "max_rss_kb", "instructions", "cachegrind"}
	sim := []string{"startup_ms", "bytes_written"}
	cases := []struct {
		name  string
		known []string
		open  bool
		err   string // "" for accepted
	}{
		{"wall_ms", local, true, ""},
		{"frames", local, true, ""}, // reported by the command itself
		{"wal_ms", local, true, `did you mean "wall_ms"?`},
		{"usr_ms", local, true, `did you mean "user_ms"?`},
		{"instrucitons", local, true, `did you mean "instructions"?`},
		{"startup_ms", sim, false, ""},
		{"startup", sim, false, `did you mean "startup_ms"? (known: [startup_ms bytes_written])`},
		{"startp_ms", sim, false, `did you mean "startup_ms"?`},
		{"frames", sim, false, `"frames" is not measured here (known: [startup_ms bytes_written])`},
	}
	for _, c := range cases {
		err := CheckMetricName(2, c.name, c.known, c.open)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "metrics[2]: ")):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}

func TestClosest(t *testing.T) {
	cmds := []string{"run", "report", "replay", "compare", "check", "headless", "json"}
	metrics := []string{"startup_ms", "bytes_written"}
	for _, tt := range []struct {
		in    string
		cands []string
		want  string
	}{
		{"rn", cmds, "run"},
		{"runn", cmds, "run"},
		{"repot", cmds, "report"},
		{"headles", cmds, "headless"},
		{"haedless", cmds, "headless"}, // a transposition is one edit
		{"jsno", cmds, "json"},
		{"comp", cmds, "compare"}, // unambiguous prefix
		{"re", cmds, ""},          // ambiguous prefix, too far from all
		{"xyzzy", cmds, ""},
		{"run", cmds, ""}, // itself is no suggestion
		{"startup", metrics, "startup_ms"},
		{"st", metrics, ""}, // too short a prefix
	} {
		if got := Closest(tt.in, tt.cands); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
