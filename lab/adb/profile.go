package adb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/shquote"
)

// Profiles on a phone, with simpleperf, Android's own profiler (in
// /system/bin since Android 7.0). A profiled trial runs
//
//	echo $$; exec simpleperf record --app PKG -e cpu-clock -f 4000 -g -o FILE
//
// over its own adb shell (the shell's pid is simpleperf's once it execs),
// then am start -W as always, then `kill -INT PID`: simpleperf writes FILE
// and exits, and `simpleperf report-sample --show-callchain -i FILE` prints
// its samples as text (ParseReportSample), read back over adb shell. The
// samples' times are the phone's CLOCK_MONOTONIC (simpleperf's default
// clock), the clock of the app's PERFLAB_SPAN lines (System.nanoTime()),
// which come over the metrics port like its metrics. --app needs a
// debuggable or profileable app (or root); an app that reports no metrics
// makes a profiled trial wait MetricsWait for its spans.

// SimpleperfHz is the sampling rate of simpleperf record (its default).
const SimpleperfHz = 4000

// simpleperfWait bounds how long simpleperf may take to write its file
// after SIGINT; only a hang takes that long.
const simpleperfWait = 2 * time.Minute

// simpleperfStatus says once whether the phone has simpleperf.
type simpleperfStatus struct {
	once sync.Once
	ok   bool
	why  string
}

// CanProfile implements lab.Profiler: the phone has simpleperf (`which
// simpleperf`, asked once). Without it, the note names the phone and what
// is missing, and the run goes on without profiles.
func (d *Device) CanProfile() (bool, string) {
	d.simpleperf.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := d.c.Run(ctx, d.serial, "which simpleperf")
		var ee *ExitError
		info := d.Info()
		switch {
		case err == nil && strings.TrimSpace(out) != "":
			d.simpleperf.ok = true
		case err == nil || errors.As(err, &ee):
			d.simpleperf.why = fmt.Sprintf("%s (%s, SDK %s) has no simpleperf: `which simpleperf` found none (Android 7.0, SDK 24, and later have it in /system/bin); trials run without profiles",
				info.ID, info.Model, info.Props["ro.build.version.sdk"])
		default:
			d.simpleperf.why = fmt.Sprintf("%s: looking for simpleperf: %v; trials run without profiles", info.ID, err)
		}
	})
	return d.simpleperf.ok, d.simpleperf.why
}

var _ lab.Profiler = (*Device)(nil)

// recordFile is where trial's simpleperf record writes on the phone.
func recordFile(trial int) string { return fmt.Sprintf("%s/perflab-trial-%d.data", TmpDir, trial) }

// simpleperfRecordCmd is the shell line that records pkg into file: the
// shell prints its pid, which simpleperf keeps (exec).
func simpleperfRecordCmd(pkg, file string) string {
	return fmt.Sprintf("echo $$; exec simpleperf record --app %s -e cpu-clock -f %d -g -o %s", shquote.Quote(pkg), SimpleperfHz, shquote.Quote(file))
}

// record is a simpleperf record running on the phone.
type record struct {
	d      *Device
	file   string
	pid    int
	cancel context.CancelFunc
	done   chan recordEnd
}

// recordEnd is how simpleperf record's shell ended.
type recordEnd struct {
	code   int
	stderr string
	err    error
}

func (e recordEnd) String() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("exit status %d: %s", e.code, lastLine(e.stderr))
}

// firstLine passes the first line written to it on c.
type firstLine struct {
	buf  []byte
	sent bool
	c    chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	if !w.sent {
		w.buf = append(w.buf, p...)
		if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
			w.sent = true
			w.c <- string(w.buf[:i])
		}
	}
	return len(p), nil
}

// startRecord starts simpleperf record of pkg for trial and returns once
// it runs (its pid is known), or a note saying why not.
func (d *Device) startRecord(ctx context.Context, pkg string, trial int) (*record, string) {
	rctx, cancel := context.WithCancel(ctx)
	r := &record{d: d, file: recordFile(trial), cancel: cancel, done: make(chan recordEnd, 1)}
	pid := &firstLine{c: make(chan string, 1)}
	go func() {
		var errb bytes.Buffer
		code, err := d.c.Shell(rctx, d.serial, simpleperfRecordCmd(pkg, r.file), nil, pid, &errb)
		r.done <- recordEnd{code, errb.String(), err}
	}()
	select {
	case line := <-pid.c:
		n, err := strconv.Atoi(strings.TrimSpace(line))
		if err == nil && n > 0 {
			r.pid = n
			// The shell prints its pid before it execs simpleperf: wait
			// until simpleperf runs under it, so that the launch after
			// this is recorded and the SIGINT finds it.
			if why := d.waitRunning(ctx, n); why != "" {
				cancel()
				<-r.done
				return nil, why
			}
			return r, ""
		}
		cancel()
		<-r.done
		return nil, fmt.Sprintf("simpleperf record: the shell printed %q, not its pid", line)
	case e := <-r.done:
		cancel()
		return nil, "simpleperf record did not start: " + e.String()
	}
}

// waitRunning waits until pidof simpleperf lists pid (toybox pidof, as
// the simulated phone's); a note when it does not within
// simpleperfWait.
func (d *Device) waitRunning(ctx context.Context, pid int) string {
	deadline := time.Now().Add(simpleperfWait)
	for {
		out, _ := d.c.Run(ctx, d.serial, "pidof simpleperf")
		for _, f := range strings.Fields(out) {
			if f == strconv.Itoa(pid) {
				return ""
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Sprintf("simpleperf record (pid %d) did not start within %v", pid, simpleperfWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop ends the record (SIGINT: simpleperf writes its file) and, when
// read, returns its profile; the file is removed. The note says what was
// lost.
func (r *record) stop(ctx context.Context, read bool) (*lab.Profile, string) {
	defer r.cancel()
	c, serial := r.d.c, r.d.serial
	defer c.Run(context.WithoutCancel(ctx), serial, "rm -f "+shquote.Quote(r.file))
	// A kill that fails (simpleperf ended already) leaves done to say why.
	c.Run(ctx, serial, fmt.Sprintf("kill -INT %d", r.pid))
	t := time.NewTimer(simpleperfWait)
	defer t.Stop()
	select {
	case e := <-r.done:
		if e.err != nil || e.code != 0 {
			return nil, "simpleperf record: " + e.String()
		}
	case <-t.C:
		return nil, fmt.Sprintf("simpleperf record still running %v after SIGINT", simpleperfWait)
	case <-ctx.Done():
		return nil, "simpleperf record: " + ctx.Err().Error()
	}
	if !read {
		return nil, ""
	}
	out, err := c.Run(ctx, serial, "simpleperf report-sample --show-callchain -i "+shquote.Quote(r.file))
	if err != nil {
		return nil, "simpleperf report-sample: " + err.Error()
	}
	p, err := ParseReportSample(strings.NewReader(out))
	if err != nil {
		return nil, err.Error()
	}
	return p, strings.Join(p.Notes, "; ")
}

// joinNotes joins non-empty notes with "; ".
func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// ParseReportSample parses the text of `simpleperf report-sample
// --show-callchain` (cmd_report_sample.cpp): a meta_info block, then a
// block per sample,
//
//	sample:
//	  event_type: cpu-clock
//	  time: 123456789
//	  event_count: 250000
//	  thread_id: 4321
//	  thread_name: com.example
//	  vaddr_in_file: 1a2b
//	  file: /data/app/.../base.odex
//	  symbol: com.example.Leaf.run
//	  callchain:
//	    vaddr_in_file: ...
//	    file: ...
//	    symbol: com.example.Caller.call
//
// and a lost_situation block: each sample's stack is its symbols, leaf
// first, its time the record's clock in nanoseconds, its weight the
// event_count (nanoseconds of a clock event). A line that is not KEY: VALUE
// in a known block, or a number that is not one, is an error naming the
// line; unknown symbols and lost samples are notes.
func ParseReportSample(r io.Reader) (*lab.Profile, error) {
	rs := &reportSample{p: &lab.Profile{Source: "simpleperf", PeriodNs: int64(time.Second) / SimpleperfHz}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		rs.line++
		if err := rs.readLine(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := rs.flush(); err != nil {
		return nil, err
	}
	return rs.profile()
}

// reportSample is ParseReportSample's state: the profile read so far, the
// block the lines are in, the sample being read, and what the notes count.
type reportSample struct {
	p                *lab.Profile
	line             int
	block            string
	cur              *lab.ProfileSample
	curLine          int
	event, curEvent  string         // the session's event type, and the sample's
	unknown          int            // frames without a symbol
	addr             uint64         // the frame being read: its vaddr_in_file
	file             string         // and its file
	maps             map[string]int // file → 1-based index into p.Mappings
	unnamed          map[int]bool   // mappings with a frame without a symbol
	lost, lostOf     int64
	nonClockWarnings bool
}

// bad is an error naming the line being read.
func (rs *reportSample) bad(format string, a ...any) error {
	return fmt.Errorf("simpleperf report-sample line %d: %s", rs.line, fmt.Sprintf(format, a...))
}

// num reads a count.
func (rs *reportSample) num(key, v string) (int64, error) {
	x, err := strconv.ParseInt(v, 10, 64)
	if err != nil || x < 0 {
		return 0, rs.bad("%s %q is not a count", key, v)
	}
	return x, nil
}

// flush adds the sample being read to the profile: one of another event
// than a clock weighs one period.
func (rs *reportSample) flush() error {
	cur := rs.cur
	if cur == nil {
		return nil
	}
	if len(cur.Stack) == 0 {
		return fmt.Errorf("simpleperf report-sample line %d: a sample without a symbol", rs.curLine)
	}
	if !isClockEvent(rs.curEvent) {
		cur.Weight = 0 // counts of another event: a sample is a period
		rs.nonClockWarnings = true
	}
	rs.p.Samples = append(rs.p.Samples, *cur)
	rs.cur = nil
	return nil
}

// readLine reads one line: KEY: VALUE, a block's start when it is not
// indented, else a field of the block.
func (rs *reportSample) readLine(raw string) error {
	s := strings.TrimSpace(raw)
	if s == "" {
		return nil
	}
	key, val, ok := strings.Cut(s, ":")
	if !ok || strings.ContainsAny(key, " \t") {
		return rs.bad("want KEY: VALUE, got %q", s)
	}
	val = strings.TrimSpace(val)
	if raw[0] != ' ' && raw[0] != '\t' {
		return rs.startBlock(key)
	}
	switch rs.block {
	case "meta_info":
		if key == "event_type" {
			rs.event = val
		}
	case "lost_situation":
		return rs.lostField(key, val)
	case "sample":
		return rs.sampleField(key, val)
	default:
		return rs.bad("%q outside a block", s)
	}
	return nil
}

// startBlock ends the sample being read and starts block key.
func (rs *reportSample) startBlock(key string) error {
	if err := rs.flush(); err != nil {
		return err
	}
	switch key {
	case "sample":
		rs.cur, rs.curLine, rs.curEvent = &lab.ProfileSample{TimeNs: -1}, rs.line, rs.event
	case "meta_info", "lost_situation":
	default:
		return rs.bad("unknown block %q (want meta_info, sample or lost_situation)", key)
	}
	rs.block = key
	return nil
}

// lostField reads a field of the lost_situation block.
func (rs *reportSample) lostField(key, val string) error {
	var err error
	switch key {
	case "lost_count":
		rs.lost, err = rs.num(key, val)
	case "sample_count":
		rs.lostOf, err = rs.num(key, val)
	}
	return err
}

// sampleField reads a field of a sample: its event, time, weight, and the
// symbols of its stack, leaf first.
func (rs *reportSample) sampleField(key, val string) error {
	var err error
	switch key {
	case "event_type":
		rs.curEvent = val
	case "time":
		rs.cur.TimeNs, err = rs.num(key, val)
	case "event_count":
		rs.cur.Weight, err = rs.num(key, val)
	case "vaddr_in_file":
		rs.addr, err = strconv.ParseUint(val, 16, 64)
		if err != nil {
			return rs.bad("vaddr_in_file %q is not a hex address", val)
		}
	case "file":
		rs.file = val
	case "symbol":
		if val == "" {
			return rs.bad("an empty symbol")
		}
		mi := rs.mapping()
		if val == "unknown" || strings.Contains(val, "[+") {
			rs.unknown++
			if rs.file != "" {
				val = elfsym.Unknown(rs.file, rs.addr) // libfoo.so+0x1a2b, as perf's frames are named
			}
			if mi > 0 {
				rs.unnamed[mi] = true
			}
		}
		rs.cur.Stack = append(rs.cur.Stack, val)
		rs.cur.Frames = append(rs.cur.Frames, lab.Frame{Addr: rs.addr, Mapping: mi})
		rs.addr, rs.file = 0, ""
	}
	return err
}

// mapping is the frame's file's mapping (1-based), added at its first
// frame, 0 when the frame names no file. simpleperf gives addresses in
// the file (vaddr_in_file): the mapping is the file from address 0,
// what pprof needs to symbolize them with the file or its debug file.
func (rs *reportSample) mapping() int {
	if rs.file == "" {
		return 0
	}
	if rs.maps == nil {
		rs.maps, rs.unnamed = map[string]int{}, map[int]bool{}
	}
	mi, ok := rs.maps[rs.file]
	if !ok {
		rs.p.Mappings = append(rs.p.Mappings, lab.Mapping{File: rs.file})
		mi = len(rs.p.Mappings)
		rs.maps[rs.file] = mi
	}
	m := &rs.p.Mappings[mi-1]
	m.Limit = max(m.Limit, rs.addr+1)
	return mi
}

// profile is the profile read, with its notes; an error when it has no
// sample.
func (rs *reportSample) profile() (*lab.Profile, error) {
	p := rs.p
	if len(p.Samples) == 0 {
		return nil, errors.New("simpleperf recorded no samples of the app (did it start while recording? is it debuggable or profileable?)")
	}
	for i := range p.Mappings {
		p.Mappings[i].Symbolized = !rs.unnamed[i+1]
	}
	if rs.unknown > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d frames without a symbol, named FILE+0xADDRESS", rs.unknown))
	}
	if rs.lost > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("simpleperf lost %d samples (kept %d)", rs.lost, rs.lostOf))
	}
	if rs.nonClockWarnings {
		p.Notes = append(p.Notes, "samples of an event other than cpu-clock or task-clock: each weighs one sampling period")
	}
	return p, nil
}

// isClockEvent says whether an event's counts are nanoseconds.
func isClockEvent(e string) bool {
	e, _, _ = strings.Cut(e, ":")
	return e == "" || e == "cpu-clock" || e == "task-clock"
}
