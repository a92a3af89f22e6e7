package sessions

import (
	"fmt"
	"math"

	"github.com/perflab/perflab/lab"
)

// HostBusyCPUs is how much CPU the host's other processes may use during
// the trials, on average, before a report warns that the host was busy:
// a quarter of a CPU, where one other busy process reads 1 on any number
// of CPUs. The mean must exceed it by two standard errors (HostBusy),
// since a short trial's own value is a whole number of /proc/stat's 10 ms
// ticks.
const HostBusyCPUs = 0.25

// hostMinTrials is the fewest counted trials with a host load that
// HostBusy judges.
const hostMinTrials = 4

// HostSummary is how busy the host was during a session's counted trials
// that recorded it (lab.Trial.Host, the local device's).
type HostSummary struct {
	Trials    int     // counted trials with a host load
	OtherCPUs float64 // other processes' CPUs, mean over those trials
	SE        float64 // standard error of OtherCPUs
	Load1     float64 // 1-minute load average, mean over those trials
	CPUs      int     // online CPUs (the most any trial saw)
}

// SummarizeHost sums up the host loads of trials, each trial once,
// whatever its length.
func SummarizeHost(loads []lab.HostLoad) HostSummary {
	var a hostAcc
	for i := range loads {
		a.add(&loads[i])
	}
	return a.summary()
}

// hostAcc accumulates host loads (Welford's mean and variance).
type hostAcc struct {
	n               int
	mean, m2, load1 float64
	cpus            int
}

func (a *hostAcc) add(h *lab.HostLoad) {
	a.n++
	d := h.OtherCPUs - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (h.OtherCPUs - a.mean)
	a.load1 += h.Load1
	a.cpus = max(a.cpus, h.CPUs)
}

func (a *hostAcc) summary() HostSummary {
	s := HostSummary{Trials: a.n, OtherCPUs: a.mean, CPUs: a.cpus}
	if a.n > 0 {
		s.Load1 = a.load1 / float64(a.n)
	}
	if a.n > 1 {
		s.SE = math.Sqrt(a.m2 / float64(a.n-1) / float64(a.n))
	}
	return s
}

// HostBusy reports whether the host was busy during the trials: at
// least hostMinTrials of them, and other processes' mean CPUs more than
// HostBusyCPUs by two standard errors.
func (s HostSummary) HostBusy() bool {
	return s.Trials >= hostMinTrials && s.OtherCPUs-2*s.SE > HostBusyCPUs
}

// Warning is the report's warning when the host was busy, "" otherwise.
func (s HostSummary) Warning() string {
	if !s.HostBusy() {
		return ""
	}
	cpus := "CPUs"
	if s.CPUs == 1 {
		cpus = "CPU"
	}
	return fmt.Sprintf("host busy: other processes used %s CPUs on average during the trials (load average %.1f on %d %s); timings are noisier than on an idle host",
		roughCPUs(s.OtherCPUs), s.Load1, s.CPUs, cpus)
}

// roughCPUs prints a number of CPUs to two decimals below 1, one from 1
// on.
func roughCPUs(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// HostWarnings returns the warning, if any, about how busy the host was
// during the counted trials of events (HostSummary.Warning); report,
// replay, run and the workbench add it to the report's warnings.
func HostWarnings(events []lab.Event) []string {
	var a hostAcc
	for _, e := range events {
		if t := e.Trial; t != nil && t.Host != nil && t.Counted() {
			a.add(t.Host)
		}
	}
	if w := a.summary().Warning(); w != "" {
		return []string{w}
	}
	return nil
}
