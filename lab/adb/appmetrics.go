package adb

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
)

// The metrics of an adb trial: am start's launch times, and what the app
// reports itself over a forwarded TCP port.

// amMetrics are the metrics am start -W measures on every launch.
var amMetrics = []string{MetricTotalTime, MetricWaitTime}

// CheckMetrics says, without touching the phone, whether the metrics exp
// asks for can come back (lab.MetricChecker): am start -W's always; any
// other is the app's own, reported over adb reverse, which cannot reach
// this host from an adb server on another one without a tunnel. Setup
// makes the same check first.
func (d *Device) CheckMetrics(exp *lab.Experiment) error {
	if d.appMetricsReach() {
		return nil
	}
	for i, m := range exp.Metrics {
		if !slices.Contains(amMetrics, m) {
			return fmt.Errorf("metrics[%d]: %q is not measured here (known: %v): %w", i, m, amMetrics, d.c.remoteErr("the app's own metrics over adb reverse"))
		}
	}
	return nil
}

var _ lab.MetricChecker = (*Device)(nil)

// appMetricsReach says whether the app's own metrics can reach this host
// through adb reverse: the adb server is on this host, or on one perflab
// has a tunnel to.
func (d *Device) appMetricsReach() bool {
	return !d.c.Remote() || d.c.Tunnel != nil
}

// metricListener accepts the app's connections (through adb reverse) and
// collects PERFLAB_METRIC lines, and PERFLAB_SPAN lines: the app's phases.
type metricListener struct {
	ln   net.Listener
	port int // where the phone connects (adb reverse tcp:port tcp:port), on the adb server's host
	// unexpose ends the relay from the adb server's host (a remote one).
	unexpose func() error

	mu      sync.Mutex
	cond    *sync.Cond
	open    int // connections being read
	seen    int // connections accepted since reset
	metrics []lab.Metric
	bad     []string
	spans   lab.SpanLog
	badSpan []string
}

func (d *Device) openMetrics(ctx context.Context) error {
	d.mu.Lock()
	m := d.metrics
	d.mu.Unlock()
	if m == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("metric listener: %w", err)
		}
		port, unexpose, err := d.c.exposeLocal("app metrics over adb reverse", ln.Addr().(*net.TCPAddr).Port)
		if err != nil {
			ln.Close()
			return err
		}
		m = &metricListener{ln: ln, port: port, unexpose: unexpose}
		m.cond = sync.NewCond(&m.mu)
		go m.serve()
		d.mu.Lock()
		d.metrics = m
		d.mu.Unlock()
	}
	// The same port number on both sides keeps concurrent runs apart.
	if err := d.c.Reverse(ctx, d.serial, m.port, m.port); err != nil {
		return fmt.Errorf("adb reverse for app metrics: %w", err)
	}
	return nil
}

func (m *metricListener) serve() {
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			return
		}
		m.mu.Lock()
		m.open++
		m.seen++
		m.mu.Unlock()
		go func() {
			defer conn.Close()
			sc := bufio.NewScanner(conn)
			for sc.Scan() {
				line := sc.Text()
				if lab.SpanStart([]byte(strings.TrimSpace(line))) {
					m.mu.Lock()
					if err := m.spans.Add(strings.TrimSpace(line)); err != nil {
						m.badSpan = append(m.badSpan, err.Error())
					}
					m.mu.Unlock()
					continue
				}
				if !lab.IsMetricLine(line) {
					continue
				}
				mt, err := lab.ParseMetricLine(line)
				m.mu.Lock()
				if err != nil {
					m.bad = append(m.bad, err.Error())
				} else {
					m.metrics = append(m.metrics, mt)
				}
				m.mu.Unlock()
			}
			m.mu.Lock()
			m.open--
			m.cond.Broadcast()
			m.mu.Unlock()
		}()
	}
}

func (m *metricListener) reset() {
	m.mu.Lock()
	m.seen, m.metrics, m.bad, m.spans, m.badSpan = 0, nil, nil, lab.SpanLog{}, nil
	m.mu.Unlock()
}

// appReport is what the app sent over the metrics port in a trial.
type appReport struct {
	metrics []lab.Metric
	bad     []string // malformed metric lines
	spans   []lab.Span
	badSpan []string // malformed span lines
}

// collect waits until a connection came and all are closed, or wait
// passes, and returns what arrived.
func (m *metricListener) collect(ctx context.Context, wait time.Duration) appReport {
	deadline := time.Now().Add(wait)
	t := time.AfterFunc(wait, func() { m.mu.Lock(); m.cond.Broadcast(); m.mu.Unlock() })
	defer t.Stop()
	stop := context.AfterFunc(ctx, func() { m.mu.Lock(); m.cond.Broadcast(); m.mu.Unlock() })
	defer stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for (m.seen == 0 || m.open > 0) && time.Now().Before(deadline) && ctx.Err() == nil {
		m.cond.Wait()
	}
	return appReport{metrics: append([]lab.Metric(nil), m.metrics...), bad: append([]string(nil), m.bad...),
		spans: m.spans.Spans(), badSpan: append([]string(nil), m.badSpan...)}
}

var amLine = regexp.MustCompile(`(?m)^(TotalTime|WaitTime|Status|LaunchState):\s*(\S+)`)

// ParseAmStart reads am start -W output.
func ParseAmStart(out string) (total, wait float64, err error) {
	total, wait = -1, -1
	for _, m := range amLine.FindAllStringSubmatch(out, -1) {
		switch m[1] {
		case "Status":
			if m[2] != "ok" {
				return 0, 0, fmt.Errorf("am start: Status: %s", m[2])
			}
		case "TotalTime":
			total, err = strconv.ParseFloat(m[2], 64)
		case "WaitTime":
			wait, err = strconv.ParseFloat(m[2], 64)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("am start: bad %s %q", m[1], m[2])
		}
	}
	if total < 0 {
		return 0, 0, fmt.Errorf("am start printed no TotalTime: %q", strings.TrimSpace(out))
	}
	return total, wait, nil
}

func wantsAppMetrics(want []string) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if !slices.Contains(amMetrics, w) {
			return true
		}
	}
	return false
}

// filterMetrics keeps the requested metrics (all when none are named) and
// fails the trial when one is missing.
func filterMetrics(ms []lab.Metric, want []string) lab.TrialResult {
	if len(want) == 0 {
		return lab.TrialResult{Status: lab.StatusOK, Metrics: ms}
	}
	var out []lab.Metric
	for _, w := range want {
		found := false
		for _, m := range ms {
			if m.Name == w {
				out = append(out, m)
				found = true
				break
			}
		}
		if !found {
			have := make([]string, len(ms))
			for i, m := range ms {
				have[i] = m.Name
			}
			return lab.TrialResult{Status: lab.StatusFailed, Metrics: ms,
				Reason: fmt.Sprintf("metric %s not reported (got: %s; the app reports its own over adb reverse as PERFLAB_METRIC lines)", w, strings.Join(have, ", "))}
		}
	}
	return lab.TrialResult{Status: lab.StatusOK, Metrics: out}
}
