package adb_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/shquote"
	"github.com/perflab/perflab/lab/simdevice"
	"github.com/perflab/perflab/lab/simdevice/shell"
)

func TestParseDevices(t *testing.T) {
	in := "emulator-5554          device product:sdk model:Android_SDK device:generic transport_id:1\n" +
		"0123456789ABCDEF       unauthorized usb:1-1 transport_id:2\n" +
		"10.0.0.5:5555          offline transport_id:3\n" +
		"FA7AJ1A01234           no permissions (user in plugdev group; are your udev rules wrong?); see [http://developer.android.com/tools/device.html] usb:1-2 transport_id:4\n"
	got := adb.ParseDevices(in, "h:1")
	want := []struct{ serial, state, model string }{
		{"emulator-5554", "device", "Android_SDK"},
		{"0123456789ABCDEF", "unauthorized", ""},
		{"10.0.0.5:5555", "offline", ""},
		{"FA7AJ1A01234", "no permissions (user in plugdev group; are your udev rules wrong?); see [http://developer.android.com/tools/device.html]", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Serial != w.serial || g.State != w.state || g.Attrs["model"] != w.model || g.Server != "h:1" {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestParseServer(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"127.0.0.1:5037", "127.0.0.1:5037", ""},
		{"tcp:5038", "127.0.0.1:5038", ""},
		{"tcp:lab7:5037", "lab7:5037", ""},
		{"6000", "127.0.0.1:6000", ""},
		{"lab7", "", "want HOST:PORT"},
		{"lab7:99999", "", "bad port"},
	} {
		got, err := adb.ParseServer(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseServer(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseServer(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// timedWriter records when each write arrived.
type timedWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	times []time.Time
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.times = append(w.times, time.Now())
	return w.buf.Write(p)
}

func TestShellAgainstRealADBServer(t *testing.T) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 3})
	adbtest.Connect(t, srv, sim.Addr, "device")
	c := srv.Client
	serial := sim.Addr

	t.Run("exit codes and separate stderr", func(t *testing.T) {
		var out, errb bytes.Buffer
		code, err := c.Shell(ctx(t), serial, `echo out; echo "err x" >&2; false || exit 3`, nil, &out, &errb)
		if err != nil {
			t.Fatal(err)
		}
		if code != 3 || out.String() != "out\n" || errb.String() != "err x\n" {
			t.Errorf("code %d stdout %q stderr %q; want 3, \"out\\n\", \"err x\\n\"", code, out.String(), errb.String())
		}
	})
	t.Run("unknown command is 127 like Android", func(t *testing.T) {
		_, err := c.Run(ctx(t), serial, "frobnicate --now")
		var ee *adb.ExitError
		if !errors.As(err, &ee) || ee.Code != 127 || !strings.Contains(ee.Stderr, "frobnicate: inaccessible or not found") {
			t.Fatalf("err = %v, want exit 127 with 'inaccessible or not found'", err)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		var out bytes.Buffer
		code, err := c.Shell(ctx(t), serial, "cat", strings.NewReader("piped in\n"), &out, nil)
		if err != nil || code != 0 || out.String() != "piped in\n" {
			t.Fatalf("cat with stdin: code %d err %v out %q", code, err, out.String())
		}
	})
	t.Run("interactive shell, from lab/adb and from the adb command line", func(t *testing.T) {
		var out bytes.Buffer
		code, err := c.Shell(ctx(t), serial, "", strings.NewReader("getprop ro.product.model\nfalse\nexit\n"), &out, nil)
		if err != nil || code != 1 || out.String() != "sim:/ # Pixel 3\nsim:/ # sim:/ # " {
			t.Errorf("interactive: code %d err %v out %q", code, err, out.String())
		}
		cmd := exec.Command("adb", "-P", strconv.Itoa(srv.Port), "-s", serial, "shell")
		cmd.Stdin = strings.NewReader("id -u\nexit\n")
		got, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(got), "sim:/ # 2000") {
			t.Errorf("adb shell with piped input: %v %q", err, got)
		}
	})
	t.Run("output streams before the command ends", func(t *testing.T) {
		w := &timedWriter{}
		start := time.Now()
		code, err := c.Shell(ctx(t), serial, "echo first; sleep 1.5; echo second", nil, w, nil)
		if err != nil || code != 0 {
			t.Fatal(code, err)
		}
		// Two writes, one per line 1.5 s apart: output collected to the
		// end would come in one. (No bound on when: a loaded host delays
		// any line.)
		if w.buf.String() != "first\nsecond\n" || len(w.times) != 2 {
			t.Fatalf("got %q in %d writes after %v: output is buffered", w.buf.String(), len(w.times), time.Since(start))
		}
	})
	t.Run("root via su only", func(t *testing.T) {
		gov := "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
		_, err := c.Run(ctx(t), serial, "echo performance > "+gov)
		var ee *adb.ExitError
		if !errors.As(err, &ee) || !strings.Contains(ee.Stderr, "Permission denied") {
			t.Fatalf("write as shell user: %v, want Permission denied", err)
		}
		out, err := c.Run(ctx(t), serial, "su -c "+shquote.Quote("echo performance > "+gov)+" && cat "+gov)
		if err != nil || out != "performance\n" {
			t.Fatalf("su -c write: %q %v", out, err)
		}
	})
	t.Run("push pull and the probe's ABI check", func(t *testing.T) {
		data := fakeELF(183, 2) // arm64
		if err := c.Push(ctx(t), serial, bytes.NewReader(data), "/data/local/tmp/perflab-probe", 0o755, time.Now()); err != nil {
			t.Fatal(err)
		}
		var back bytes.Buffer
		if err := c.Pull(ctx(t), serial, "/data/local/tmp/perflab-probe", &back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back.Bytes(), data) {
			t.Fatalf("pulled %d bytes differ from the %d pushed", back.Len(), len(data))
		}
		out, err := c.Run(ctx(t), serial, "/data/local/tmp/perflab-probe -duration 3s -interval 1s")
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out, `"mflops":`); n != 3 {
			t.Errorf("probe printed %d samples, want 3:\n%s", n, out)
		}
		if err := c.Push(ctx(t), serial, bytes.NewReader(fakeELF(62, 2)), "/data/local/tmp/x86", 0o755, time.Now()); err != nil {
			t.Fatal(err)
		}
		_, err = c.Run(ctx(t), serial, "/data/local/tmp/x86")
		var ee *adb.ExitError
		if !errors.As(err, &ee) || ee.Code != 126 || !strings.Contains(ee.Stderr, "not executable: 64-bit ELF file") {
			t.Errorf("x86-64 binary on arm64: %v, want exit 126 not executable", err)
		}
		err = c.Push(ctx(t), serial, strings.NewReader("x"), "/system/bin/evil", 0o755, time.Now())
		if err == nil || !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("push to /system: %v, want Permission denied", err)
		}
	})
	t.Run("large files cross intact (flow control, chunking)", func(t *testing.T) {
		data := make([]byte, 3<<20+12345)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if err := c.Push(ctx(t), serial, bytes.NewReader(data), "/sdcard/big.bin", 0o644, time.Now()); err != nil {
			t.Fatal(err)
		}
		var back bytes.Buffer
		if err := c.Pull(ctx(t), serial, "/sdcard/big.bin", &back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back.Bytes(), data) {
			t.Fatalf("pulled %d bytes, pushed %d: contents differ", back.Len(), len(data))
		}
		// The same bytes through shell v2 stdout.
		var out bytes.Buffer
		code, err := c.Shell(ctx(t), serial, "cat /sdcard/big.bin", nil, &out, nil)
		if err != nil || code != 0 || !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("cat of the big file: code %d err %v, %d bytes", code, err, out.Len())
		}
	})
	t.Run("through gadb: version, list, stat, forward", func(t *testing.T) {
		if v, err := c.Version(ctx(t)); err != nil || v < 30 {
			t.Errorf("server version %d %v", v, err)
		}
		data := []byte("twelve bytes")
		mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
		if _, err := c.Run(ctx(t), serial, "mkdir -p /data/local/tmp/gadb"); err != nil {
			t.Fatal(err)
		}
		if err := c.Push(ctx(t), serial, bytes.NewReader(data), "/data/local/tmp/gadb/listed.txt", 0o640, mtime); err != nil {
			t.Fatal(err)
		}
		ents, err := c.List(ctx(t), serial, "/data/local/tmp/gadb")
		if err != nil || len(ents) != 1 || ents[0].Name != "listed.txt" || ents[0].Size != 12 || ents[0].IsDir() {
			t.Errorf("list: %+v %v", ents, err)
		}
		st, err := c.Stat(ctx(t), serial, "/data/local/tmp/gadb/listed.txt")
		if err != nil || st.Size != 12 || st.Mode&0o777 != 0o640 || st.ModTime.IsZero() {
			t.Errorf("stat: %+v %v", st, err)
		}
		if st, err := c.Stat(ctx(t), serial, "/data/local/tmp/gadb"); err != nil || !st.IsDir() {
			t.Errorf("stat of a directory: %+v %v", st, err)
		}
		if _, err := c.Stat(ctx(t), serial, "/data/local/tmp/gadb/missing"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stat of a missing file: %v", err)
		}
		if err := c.Pull(ctx(t), serial, "/data/local/tmp/gadb/missing", io.Discard); err == nil {
			t.Error("pulling a missing file succeeded")
		}
		hostPort := adbtest.FreePort(t)
		if err := c.Forward(ctx(t), serial, hostPort, 8080); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("tcp:%d tcp:8080", hostPort)
		if fl, err := c.ForwardList(ctx(t), serial); err != nil || !slices.Contains(fl, want) {
			t.Errorf("forward list %q %v, want %q", fl, err, want)
		}
		if err := c.ForwardRemove(ctx(t), serial, hostPort); err != nil {
			t.Fatal(err)
		}
		if fl, err := c.ForwardList(ctx(t), serial); err != nil || slices.Contains(fl, want) {
			t.Errorf("forward list after remove %q %v", fl, err)
		}
		if err := c.Forward(ctx(t), "no-such-serial", hostPort, 8080); !errors.Is(err, adb.ErrDeviceLost) {
			t.Errorf("forward to a missing device: %v", err)
		}
	})
	t.Run("adb connect failures are errors", func(t *testing.T) {
		_, err := c.Connect(ctx(t), fmt.Sprintf("127.0.0.1:%d", adbtest.FreePort(t)))
		if err == nil || !strings.Contains(err.Error(), "failed to connect") {
			t.Errorf("connect to a closed port: %v", err)
		}
	})
	t.Run("reverse carries the app's metric lines", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		hostPort := ln.Addr().(*net.TCPAddr).Port
		lines := make(chan string, 10)
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			sc := bufio.NewScanner(conn)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Without a reverse the app cannot connect, and the device must
		// not OPEN an unknown port (the adb server would abort).
		out, err := c.Run(ctx(t), serial, "am start -W -n org.perflab.sim.feed/.MainActivity --ei perflab.metrics_port 7100")
		if err != nil || !strings.Contains(out, "TotalTime:") {
			t.Fatalf("am start without reverse: %q %v", out, err)
		}
		if err := c.Reverse(ctx(t), serial, 7100, hostPort); err != nil {
			t.Fatal(err)
		}
		list, err := c.ReverseList(ctx(t), serial)
		if err != nil || len(list) != 1 || list[0] != "tcp:7100 tcp:"+strconv.Itoa(hostPort) {
			t.Fatalf("reverse list = %q, %v", list, err)
		}
		out, err = c.Run(ctx(t), serial, "am start -W -n org.perflab.sim.feed/.MainActivity --ei perflab.metrics_port 7100")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for l := range lines {
			got = append(got, l)
		}
		if len(got) == 0 || !strings.HasPrefix(got[0], "PERFLAB_METRIC startup_ms=") {
			t.Fatalf("metric lines over reverse: %q", got)
		}
		if err := c.ReverseRemove(ctx(t), serial, 7100); err != nil {
			t.Fatal(err)
		}
		if err := c.ReverseRemove(ctx(t), serial, 7100); err == nil {
			t.Error("removing a missing reverse succeeded")
		}
		// The adb server is still alive after all this.
		if _, err := c.Version(ctx(t)); err != nil {
			t.Fatalf("adb server died: %v", err)
		}
	})
}

// fakeELF is an ELF header for machine with the probe marker inside; the
// simulated phone checks the header and the marker, never runs the code.
func fakeELF(machine uint16, class byte) []byte {
	b := make([]byte, 64)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = class, 1, 1
	binary.LittleEndian.PutUint16(b[18:], machine)
	return append(b, []byte("...github.com/perflab/perflab/"+shell.ProbeMarker+".main...")...)
}

func TestDeviceStatesAcrossTwoServers(t *testing.T) {
	t.Parallel()
	s1 := adbtest.StartServer(t)
	s2 := adbtest.StartServer(t)
	a := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 1})
	b := adbtest.StartSim(t, "", simdevice.Options{Preset: "nexus5", Seed: 2})
	locked := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: 3, Unauthorized: true})
	adbtest.Connect(t, s1, a.Addr, "device")
	adbtest.Connect(t, s2, b.Addr, "device")
	adbtest.Connect(t, s2, locked.Addr, "unauthorized")

	es1, err := s1.Devices(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	es2, err := s2.Devices(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(es1) != 1 || es1[0].Serial != a.Addr || es1[0].Attrs["model"] != "Pixel_3" || es1[0].Server != s1.Addr {
		t.Errorf("server 1 lists %+v", es1)
	}
	states := map[string]string{}
	for _, e := range es2 {
		states[e.Serial] = e.State
	}
	if states[b.Addr] != "device" || states[locked.Addr] != "unauthorized" {
		t.Errorf("server 2 states %v", states)
	}
	// Both devices answer at once, each through its own server.
	var wg sync.WaitGroup
	models := make([]string, 2)
	for i, d := range []struct {
		c      *adb.Client
		serial string
	}{{s1.Client, a.Addr}, {s2.Client, b.Addr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := d.c.Run(ctx(t), d.serial, "getprop ro.product.model")
			if err != nil {
				t.Error(err)
			}
			models[i] = strings.TrimSpace(out)
		}()
	}
	wg.Wait()
	if models[0] != "Pixel 3" || models[1] != "Nexus 5" {
		t.Errorf("models %q", models)
	}
	// A device that stops serving goes offline, and is not dropped.
	a.Stop()
	adbtest.WaitState(t, s1, a.Addr, "offline", time.Minute)
	_, err = s1.Run(ctx(t), a.Addr, "true")
	if !errors.Is(err, adb.ErrDeviceLost) {
		t.Errorf("shell on an offline device: %v, want ErrDeviceLost", err)
	}
}
