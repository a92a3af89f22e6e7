package local

import (
	"bytes"
	"math"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab"
	"golang.org/x/sys/unix"
)

// hostMeter measures what else the host does during a trial: the busy
// time of all CPUs from /proc/stat before and after the command, less the
// command's CPU time (its rusage) and perflab's own (RUSAGE_SELF), and
// the load average after it. Its files stay open between trials (a read
// at offset 0 makes the kernel write them anew), which saves an open and
// a close per read: about 7 µs per read of /proc/stat instead of 18 on a
// 2-CPU VM. It is used under the device's trialMu; close closes them.
type hostMeter struct {
	stat, loadavg int  // file descriptors, when open
	open          bool // both are open
	failed        bool // a file could not be opened or read: measure no more
	buf           []byte
}

// hostMark is the host's state at one instant of a trial.
type hostMark struct {
	at   time.Time
	busy uint64        // all CPUs' busy clock ticks since boot
	cpus int           // online CPUs
	self time.Duration // perflab's own CPU time so far
}

// mark reads the host's state now; false when it cannot.
func (m *hostMeter) mark() (hostMark, bool) {
	if m.failed {
		return hostMark{}, false
	}
	if !m.open {
		var err error
		if m.stat, err = openProc("/proc/stat"); err != nil {
			m.failed = true
			return hostMark{}, false
		}
		if m.loadavg, err = openProc("/proc/loadavg"); err != nil {
			syscall.Close(m.stat)
			m.failed = true
			return hostMark{}, false
		}
		m.open, m.buf = true, make([]byte, 4096)
	}
	b, ok := m.read(m.stat)
	if !ok {
		return hostMark{}, false
	}
	busy, cpus, ok := parseProcStat(b)
	if !ok {
		m.failed = true
		return hostMark{}, false
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		m.failed = true
		return hostMark{}, false
	}
	return hostMark{at: time.Now(), busy: busy, cpus: cpus, self: cpuTime(&ru)}, true
}

// openProc opens a /proc file to be read with read.
func openProc(path string) (int, error) {
	return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
}

// read reads the file fd whole from its start into m.buf, growing it as
// needed: one pread (os.File.ReadAt would make a second, to see the end).
func (m *hostMeter) read(fd int) ([]byte, bool) {
	for {
		n, err := syscall.Pread(fd, m.buf, 0)
		switch {
		case err == syscall.EINTR:
			continue
		case err == nil && n > 0 && n < len(m.buf):
			return m.buf[:n], true
		case err != nil || n <= 0 || len(m.buf) >= 1<<20:
			m.failed = true
			return nil, false
		}
		m.buf = make([]byte, 2*len(m.buf))
	}
}

// load reads the trial's HostLoad at its end from the marks taken before
// and after the command and the command's own CPU time.
func (m *hostMeter) load(before, after hostMark, own time.Duration) *lab.HostLoad {
	b, ok := m.read(m.loadavg)
	if !ok {
		return nil
	}
	load1, ok := parseLoadavg(b)
	if !ok {
		m.failed = true
		return nil
	}
	other, ok := otherCPUs(before, after, own, clockTick())
	if !ok {
		return nil
	}
	return &lab.HostLoad{OtherCPUs: other, Load1: load1, CPUs: after.cpus}
}

func (m *hostMeter) close() {
	if m.open {
		syscall.Close(m.stat)
		syscall.Close(m.loadavg)
	}
	*m = hostMeter{}
}

// otherCPUs is the CPU time other processes used between two marks (all
// CPUs' busy ticks less the command's own time and perflab's) over the
// time between them, in CPUs, to 3 decimals. It is not clamped at 0: a
// short trial's busy time is a whole number of ticks, too little or too
// much by up to a tick per CPU, and clamping would bias the average up.
func otherCPUs(before, after hostMark, own, tick time.Duration) (float64, bool) {
	wall := after.at.Sub(before.at)
	if wall <= 0 || after.busy < before.busy {
		return 0, false
	}
	busy := time.Duration(after.busy-before.busy) * tick
	other := busy - own - (after.self - before.self)
	v := math.Round(other.Seconds()/wall.Seconds()*1000) / 1000
	return v + 0, true // no -0
}

// parseProcStat reads /proc/stat: the busy clock ticks of all CPUs (the
// "cpu " line's user, nice, system, irq, softirq and steal; guest time
// is within user) and the number of online CPUs (its "cpuN" lines).
func parseProcStat(b []byte) (busy uint64, cpus int, ok bool) {
	line, rest, _ := bytes.Cut(b, []byte("\n"))
	line, found := bytes.CutPrefix(line, []byte("cpu "))
	if !found {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal: guest and
	// guest_nice, which follow, are within user and nice.
	fields := 0
	for i := 0; i < 8; i++ {
		line = bytes.TrimLeft(line, " ")
		if len(line) == 0 {
			break
		}
		var n uint64
		k := 0
		for ; k < len(line) && line[k] != ' '; k++ {
			c := line[k]
			if c < '0' || c > '9' || n > (math.MaxUint64-9)/10 {
				return 0, 0, false
			}
			n = n*10 + uint64(c-'0')
		}
		line = line[k:]
		fields++
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	for len(rest) > 3 && string(rest[:3]) == "cpu" {
		cpus++
		_, rest, _ = bytes.Cut(rest, []byte("\n"))
	}
	return busy, cpus, fields >= 4 && cpus > 0
}

// parseLoadavg reads /proc/loadavg's 1-minute load average.
func parseLoadavg(b []byte) (float64, bool) {
	f, _, _ := bytes.Cut(bytes.TrimLeft(b, " "), []byte(" "))
	v, err := strconv.ParseFloat(string(f), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// clockTick is the unit of /proc/stat: 1/USER_HZ, which the kernel passes
// as AT_CLKTCK (getconf CLK_TCK); 100 Hz when it cannot be read, as on
// every Linux architecture Go runs on.
var clockTick = sync.OnceValue(func() time.Duration {
	if av, err := unix.Auxv(); err == nil {
		for _, kv := range av {
			if kv[0] == atClkTck && kv[1] > 0 && kv[1] <= 1e6 {
				return time.Second / time.Duration(kv[1])
			}
		}
	}
	return 10 * time.Millisecond
})

// atClkTck is the auxiliary vector's entry for USER_HZ (linux/auxvec.h).
const atClkTck = 17

// cpuTime is the user and system time of a rusage.
func cpuTime(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
