package simdevice_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/sim"
	"github.com/perflab/perflab/lab/simdevice"
)

// lineWriter passes each complete line written to it on c.
type lineWriter struct {
	buf []byte
	c   chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.c <- string(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// TestSimpleperfRecordsTheLaunch: the simulated phone's simpleperf, as the
// adb backend drives it (echo $$; exec simpleperf record --app ...; am
// start -W; kill -INT PID; simpleperf report-sample), samples the launch
// that happened while it recorded, from the app's call tree at the rate
// asked, on the phone's uptime clock, in the text ParseReportSample reads.
func TestSimpleperfRecordsTheLaunch(t *testing.T) {
	s, err := simdevice.New(simdevice.Options{Preset: "pixel", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := func(cmd string) (string, string, int) {
		var out, errb bytes.Buffer
		code := s.Shell.Run(context.Background(), cmd, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	if out, _, code := run("which simpleperf"); code != 0 || out != "/system/bin/simpleperf\n" {
		t.Fatalf("which simpleperf: %d %q", code, out)
	}
	pkg := sim.PackageName("feed", 0)
	lines := &lineWriter{c: make(chan string, 1)}
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		done <- s.Shell.Run(context.Background(), "echo $$; exec simpleperf record --app "+pkg+" -e cpu-clock -f 4000 -g -o /data/local/tmp/t.data",
			strings.NewReader(""), lines, &errb)
	}()
	var pid string
	select {
	case pid = <-lines.c:
	case <-time.After(time.Minute): // only a hang
		t.Fatal("no pid from the record's shell")
	}
	if _, err := strconv.Atoi(pid); err != nil {
		t.Fatalf("pid line %q", pid)
	}
	// The pid comes before the exec: wait until pidof lists simpleperf
	// under it, as the adb backend does.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if out, _, _ := run("pidof simpleperf"); strings.Contains(" "+strings.TrimSpace(out)+" ", " "+pid+" ") {
			break
		}
		if time.Now().After(deadline) { // only a hang
			t.Fatal("pidof never lists simpleperf")
		}
	}
	up0 := s.Phone.Uptime()
	if out, errs, code := run("am start -W -n " + pkg + "/" + sim.MainActivity); code != 0 {
		t.Fatalf("am start: %d %s %s", code, out, errs)
	}
	if _, errs, code := run("kill -INT " + pid); code != 0 {
		t.Fatalf("kill: %d %s", code, errs)
	}
	if code := <-done; code != 0 || !strings.Contains(errb.String(), "Samples recorded:") {
		t.Fatalf("simpleperf record: exit %d, %s", code, errb.String())
	}
	if _, errs, code := run("kill -INT " + pid); code != 1 || !strings.Contains(errs, "No such process") {
		t.Errorf("kill after the end: %d %q", code, errs)
	}
	out, errs, code := run("simpleperf report-sample --show-callchain -i /data/local/tmp/t.data")
	if code != 0 {
		t.Fatalf("report-sample: %d %s", code, errs)
	}
	p, err := adb.ParseReportSample(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	// At 4 kHz: a few hundred samples of a launch of several hundred ms,
	// each 250 µs of CPU time, stacks down to ActivityThread.main, times
	// after the launch began on the phone's clock.
	leaf := map[string]int{}
	for _, smp := range p.Samples {
		leaf[smp.Stack[0]]++
		if smp.Stack[len(smp.Stack)-1] != "android.app.ActivityThread.main" || smp.TimeNs < int64(up0) || p.Weight(smp) != 250_000 {
			t.Fatalf("sample %+v (launch at %d ns)", smp, up0)
		}
	}
	if len(p.Samples) < 300 || leaf["feed.decodeImage"] == 0 {
		t.Errorf("%d samples, %d of feed.decodeImage", len(p.Samples), leaf["feed.decodeImage"])
	}
	// Without --show-callchain, the leaf alone.
	out, _, _ = run("simpleperf report-sample -i /data/local/tmp/t.data")
	if p, err := adb.ParseReportSample(strings.NewReader(out)); err != nil || len(p.Samples[0].Stack) != 1 {
		t.Errorf("report-sample without callchains: %v", err)
	}
	for _, c := range []struct{ cmd, stderr string }{
		{"simpleperf record --app org.perflab.sim.nope -o /data/local/tmp/x.data", "doesn't exist"},
		{"simpleperf record --app " + pkg + " -e instructions", "Invalid argument for -e"},
		{"simpleperf report-sample -i /data/local/tmp/missing.data", "failed to open"},
		{"simpleperf stat", "knows record and report-sample"},
	} {
		if _, errs, code := run(c.cmd); code == 0 || !strings.Contains(errs, c.stderr) {
			t.Errorf("%s: exit %d, stderr %q (want %q)", c.cmd, code, errs, c.stderr)
		}
	}
}

// TestNoSimpleperf: a phone before Android 7.0, or one served with
// NoSimpleperf, answers as a phone without the program.
func TestNoSimpleperf(t *testing.T) {
	for _, o := range []simdevice.Options{{Preset: "nexus5"}, {Preset: "pixel", NoSimpleperf: true}} {
		s, err := simdevice.New(o)
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if code := s.Shell.Run(context.Background(), "which simpleperf", strings.NewReader(""), &out, &errb); code != 1 || out.Len() != 0 {
			t.Errorf("%+v: which simpleperf: %d %q", o, code, out.String())
		}
		if code := s.Shell.Run(context.Background(), "simpleperf --version", strings.NewReader(""), &out, &errb); code != 127 ||
			!strings.Contains(errb.String(), "simpleperf: inaccessible or not found") {
			t.Errorf("%+v: simpleperf: %d %q", o, code, errb.String())
		}
	}
}
