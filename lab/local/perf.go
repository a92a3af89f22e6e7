package local

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// perfStatus says whether perf stat can count instructions here, and why not.
type perfStatus struct {
	ok  bool
	why string
}

// probePerf runs perf stat once on /bin/true and interprets the outcome.
func probePerf() perfStatus {
	if _, err := exec.LookPath("perf"); err != nil {
		return perfStatus{why: "perf is not installed (apt-get install linux-perf); use the cachegrind metric instead"}
	}
	f, err := os.CreateTemp("", "perflab-perf-*.csv")
	if err != nil {
		return perfStatus{why: err.Error()}
	}
	f.Close()
	defer os.Remove(f.Name())
	var stderr bytes.Buffer
	cmd := exec.Command("perf", "stat", "-x", ",", "-e", "instructions:u", "-o", f.Name(), "--", "true")
	cmd.Stderr = &stderr
	runErr := cmd.Run()
	_, err = readPerfInstructions(f.Name())
	if err == nil && runErr == nil {
		return perfStatus{ok: true}
	}
	paranoid := readTrim("/proc/sys/kernel/perf_event_paranoid")
	msg := ""
	switch {
	case err != nil:
		msg = err.Error()
	default:
		msg = runErr.Error()
	}
	if s := strings.TrimSpace(stderr.String()); s != "" && runErr != nil {
		msg += ": " + lastLines(s, 2)
	}
	if p, perr := strconv.Atoi(paranoid); perr == nil && p > 2 {
		msg += fmt.Sprintf(" (kernel.perf_event_paranoid=%d forbids user-space counting; `sysctl kernel.perf_event_paranoid=2` as root allows it)", p)
	}
	return perfStatus{why: "perf stat cannot count instructions on this host: " + msg + "; use the cachegrind metric instead"}
}

// readPerfInstructions reads the instructions count from perf stat -x,
// output, explaining <not supported> and <not counted>.
func readPerfInstructions(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("perf wrote no output: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Split(line, ",")
		if len(fields) < 3 || !strings.HasPrefix(fields[2], "instructions") {
			continue
		}
		switch v := fields[0]; v {
		case "<not supported>":
			return 0, fmt.Errorf("the CPU or hypervisor exposes no instructions counter (<not supported>; common in VMs and containers)")
		case "<not counted>":
			return 0, fmt.Errorf("instructions were not counted (<not counted>; counters busy or restricted)")
		default:
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("unreadable perf value %q", v)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no instructions line in perf output %s", filepath.Base(path))
}
