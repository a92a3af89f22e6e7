package shell

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/shquote"
)

// ErrNotExist reports a path the phone does not model; Phone
// implementations wrap it.
var _ = ErrNotExist

type builtin func(e *env, args []string, stdin io.Reader, stdout, stderr io.Writer) int

func builtins() map[string]builtin {
	return map[string]builtin{
		"echo": cmdEcho, "cat": cmdCat, "getprop": cmdGetprop, "setprop": cmdSetprop,
		"stop": cmdStopStart, "start": cmdStopStart, "chmod": cmdChmod, "rm": cmdRm, "cp": cmdCp,
		"mv": cmdMv, "mkdir": cmdMkdir, "ls": cmdLs, "touch": cmdTouch, "mount": cmdMount,
		"umount": cmdUmount, "date": cmdDate, "am": cmdAm, "pm": cmdPm, "input": cmdInput,
		"dumpsys": cmdDumpsys, "sync": cmdTrue, "true": cmdTrue, "false": cmdFalse, "su": cmdSu,
		"sh": cmdSh, "id": cmdID, "whoami": cmdWhoami, "sleep": cmdSleep, "uname": cmdUname,
		"pidof": cmdPidof, "grep": cmdGrep, "test": cmdTest,
		"[": cmdTest, "perflab-advance": cmdAdvance, "which": cmdWhich, "chown": cmdChown, "stat": cmdStat, "restorecon": cmdRestorecon, "getenforce": cmdGetenforce, "head": cmdHead, "wc": cmdWc,
		"settings": cmdSettings, HTTPGetCommand: cmdHTTPGet, "simpleperf": cmdSimpleperf, "exec": cmdExec, "kill": cmdKill,
	}
}

// exec runs one command: a builtin, or a file on the device.
func (e *env) exec(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := args[0]
	if strings.Contains(name, "/") {
		return e.execFile(name, args[1:], stdout, stderr)
	}
	if name == "su" && e.sh.NoSu() || name == "simpleperf" && e.sh.NoSimpleperf() {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: inaccessible or not found\n", name)
		return 127
	}
	if b, ok := builtins()[path.Base(name)]; ok {
		return b(e, args, stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "/system/bin/sh: %s: inaccessible or not found\n", name)
	return 127
}

// NoSu reports whether su is missing (property ro.perflab.no_su=1).
func (sh *Shell) NoSu() bool { return sh.Prop("ro.perflab.no_su") == "1" }

// ELF machine numbers.
const (
	emARM     = 40
	emAArch64 = 183
	em386     = 3
	emX8664   = 62
)

// ELFABI returns the Android ABI an ELF executable is built for.
func ELFABI(data []byte) (abi string, bits int, err error) {
	if len(data) < 20 || string(data[:4]) != "\x7fELF" {
		return "", 0, errors.New("not an ELF file")
	}
	bits = 32
	if data[4] == 2 {
		bits = 64
	}
	if data[5] != 1 {
		return "", bits, errors.New("big-endian ELF")
	}
	switch binary.LittleEndian.Uint16(data[18:20]) {
	case emAArch64:
		return "arm64-v8a", bits, nil
	case emARM:
		return "armeabi-v7a", bits, nil
	case emX8664:
		return "x86_64", bits, nil
	case em386:
		return "x86", bits, nil
	}
	return "unknown", bits, nil
}

// ProbeMarker is a string every build of perflab-probe contains (its
// package path), which is how the simulated phone recognises the probe.
const ProbeMarker = "lab/probe/cmd/perflab-probe"

func (e *env) execFile(name string, args []string, stdout, stderr io.Writer) int {
	p := Clean(e.cwd, name)
	info, err := e.sh.FS.Stat(p)
	if err != nil {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: inaccessible or not found\n", name)
		return 127
	}
	if info.Mode&ModeDir != 0 || info.Mode&0o111 == 0 {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: can't execute: Permission denied\n", name)
		return 126
	}
	data, err := e.sh.FS.ReadFile(p)
	if err != nil {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: %v\n", name, err)
		return 126
	}
	if strings.HasPrefix(string(data), "#!") {
		// A shell script: run its lines.
		body := string(data)
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			body = body[i+1:]
		}
		return e.sub(e.uid, stdout, stderr).runScript(body, args)
	}
	abi, bits, err := ELFABI(data)
	if err != nil {
		magic := uint16(0)
		if len(data) >= 2 {
			magic = binary.BigEndian.Uint16(data)
		}
		fmt.Fprintf(stderr, "/system/bin/sh: %s: not executable: magic %04X\n", name, magic)
		return 126
	}
	if e.runsHost(abi) {
		if code, ok := e.execHost(p, args, stdout, stderr); ok {
			return code
		}
	}
	supported := false
	for _, a := range e.sh.Phone.ABIs() {
		if a == abi {
			supported = true
		}
	}
	if !supported {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: not executable: %d-bit ELF file\n", name, bits)
		return 126
	}
	if !strings.Contains(string(data), ProbeMarker) {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: the simulated phone runs only the perflab probe\n", name)
		return 126
	}
	if err := e.sh.Phone.Probe(e.ctx, args, stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path.Base(name), err)
		return 1
	}
	return 0
}

// sub returns a nested shell (sh -c, su -c) sharing the device state.
func (e *env) sub(uid int, stdout, stderr io.Writer) *env {
	vars := make(map[string]string, len(e.vars))
	for k, v := range e.vars {
		vars[k] = v
	}
	return &env{sh: e.sh, ctx: e.ctx, pid: e.pid, uid: uid, cwd: e.cwd, vars: vars, stdin: e.stdin, stdout: stdout, stderr: stderr}
}

func cmdTrue(*env, []string, io.Reader, io.Writer, io.Writer) int  { return 0 }
func cmdFalse(*env, []string, io.Reader, io.Writer, io.Writer) int { return 1 }

func cmdGetprop(e *env, args []string, _ io.Reader, stdout, _ io.Writer) int {
	if len(args) == 1 {
		props := e.sh.props()
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(stdout, "[%s]: [%s]\n", k, props[k])
		}
		return 0
	}
	v := e.sh.Prop(args[1])
	if v == "" && len(args) > 2 {
		v = args[2]
	}
	fmt.Fprintln(stdout, v)
	return 0
}

func cmdSetprop(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	if len(args) != 3 {
		fmt.Fprintln(stderr, "usage: setprop NAME VALUE")
		return 1
	}
	name := args[1]
	if strings.HasPrefix(name, "ro.") && e.sh.Prop(name) != "" ||
		e.uid != 0 && !strings.HasPrefix(name, "debug.") && !strings.HasPrefix(name, "log.") {
		fmt.Fprintf(stderr, "Failed to set property '%s' to '%s'.\nSee dmesg for error reason.\n", name, args[2])
		return 1
	}
	if err := e.sh.Phone.SetProp(name, args[2]); err != nil {
		fmt.Fprintf(stderr, "Failed to set property '%s' to '%s': %v\n", name, args[2], err)
		return 1
	}
	return 0
}

func cmdStopStart(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	if e.uid != 0 {
		fmt.Fprintln(stderr, args[0]+": must be root")
		return 1
	}
	run := args[0] == "start"
	names := args[1:]
	if len(names) == 0 {
		names = []string{"zygote"}
	}
	for _, n := range names {
		if err := e.sh.Phone.SetService(n, run); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", args[0], err)
			return 1
		}
	}
	return 0
}

// cmdDate prints or (as root) sets the clock. Setting accepts toybox's
// MMDDhhmm[[CC]YY][.ss] and @UNIXTIME.
func cmdDate(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	now := e.sh.Phone.Now()
	utc := false
	format := ""
	var set string
	for _, a := range args[1:] {
		switch {
		case a == "-u":
			utc = true
		case strings.HasPrefix(a, "+"):
			format = a[1:]
		case a == "-s":
		default:
			set = a
		}
	}
	if utc {
		now = now.UTC()
	}
	if set != "" {
		if e.uid != 0 {
			fmt.Fprintln(stderr, "date: cannot set date: Operation not permitted")
			return 1
		}
		t, err := parseDateSet(set, now)
		if err != nil {
			fmt.Fprintf(stderr, "date: bad date '%s'\n", set)
			return 1
		}
		e.sh.Phone.SetClock(t)
		now = t
	}
	if format == "" {
		fmt.Fprintln(stdout, now.Format("Mon Jan  2 15:04:05 MST 2006"))
		return 0
	}
	fmt.Fprintln(stdout, strftime(format, now))
	return 0
}

func parseDateSet(s string, now time.Time) (time.Time, error) {
	if strings.HasPrefix(s, "@") {
		f, err := strconv.ParseFloat(s[1:], 64)
		if err != nil {
			return time.Time{}, err
		}
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)).In(now.Location()), nil
	}
	base, secs, _ := strings.Cut(s, ".")
	if len(base) != 8 && len(base) != 10 && len(base) != 12 {
		return time.Time{}, errors.New("bad length")
	}
	num := func(x string) int { n, _ := strconv.Atoi(x); return n }
	year := now.Year()
	if len(base) == 10 {
		year = 2000 + num(base[8:10])
	} else if len(base) == 12 {
		year = num(base[8:12])
	}
	t := time.Date(year, time.Month(num(base[0:2])), num(base[2:4]), num(base[4:6]), num(base[6:8]), num(secs), 0, now.Location())
	return t, nil
}

func strftime(f string, t time.Time) string {
	r := strings.NewReplacer("%s", strconv.FormatInt(t.Unix(), 10), "%Y", t.Format("2006"), "%m", t.Format("01"),
		"%d", t.Format("02"), "%H", t.Format("15"), "%M", t.Format("04"), "%S", t.Format("05"),
		"%N", fmt.Sprintf("%09d", t.Nanosecond()), "%Z", t.Format("MST"), "%%", "%")
	return r.Replace(f)
}

func cmdSu(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	rest := args[1:]
	var cmd string
	for len(rest) > 0 {
		switch a := rest[0]; {
		case a == "-c" && len(rest) > 1:
			cmd = strings.Join(rest[1:], " ")
			rest = nil
		case a == "0" || a == "root" || a == "-" || a == "-l":
			rest = rest[1:]
		default:
			cmd = strings.Join(quoteAll(rest), " ")
			rest = nil
		}
	}
	sub := e.sub(0, stdout, stderr)
	if cmd == "" {
		// su with commands on stdin.
		data, _ := io.ReadAll(e.stdin)
		return sub.runLine(string(data))
	}
	return sub.runLine(cmd)
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shquote.Quote(a)
	}
	return out
}

func cmdSh(e *env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) >= 3 && args[1] == "-c" {
		sub := e.sub(e.uid, stdout, stderr)
		return sub.runLine(args[2])
	}
	if len(args) >= 2 {
		data, err := e.readPath(args[1])
		if err != nil {
			fmt.Fprintf(stderr, "sh: %s: %v\n", args[1], err)
			return 127
		}
		return e.sub(e.uid, stdout, stderr).runLine(string(data))
	}
	data, _ := io.ReadAll(stdin)
	return e.sub(e.uid, stdout, stderr).runLine(string(data))
}

func cmdID(e *env, args []string, _ io.Reader, stdout, _ io.Writer) int {
	if len(args) > 1 && args[1] == "-u" {
		fmt.Fprintln(stdout, e.uid)
		return 0
	}
	if e.uid == 0 {
		fmt.Fprintln(stdout, "uid=0(root) gid=0(root) groups=0(root) context=u:r:su:s0")
	} else {
		fmt.Fprintln(stdout, "uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),3011(uhid) context=u:r:shell:s0")
	}
	return 0
}

func cmdWhoami(e *env, _ []string, _ io.Reader, stdout, _ io.Writer) int {
	if e.uid == 0 {
		fmt.Fprintln(stdout, "root")
	} else {
		fmt.Fprintln(stdout, "shell")
	}
	return 0
}

func cmdSleep(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: sleep SECONDS")
		return 1
	}
	f, err := strconv.ParseFloat(args[1], 64)
	if err != nil {
		fmt.Fprintf(stderr, "sleep: invalid number '%s'\n", args[1])
		return 1
	}
	if lab.Sleep(e.ctx, time.Duration(f*float64(time.Second))) != nil {
		return 130 // interrupted, as a shell reports SIGINT
	}
	return 0
}

func cmdUname(e *env, args []string, _ io.Reader, stdout, _ io.Writer) int {
	arch := "aarch64"
	if abis := e.sh.Phone.ABIs(); len(abis) > 0 && abis[0] == "armeabi-v7a" {
		arch = "armv7l"
	}
	if len(args) > 1 && args[1] == "-m" {
		fmt.Fprintln(stdout, arch)
	} else if len(args) > 1 && args[1] == "-a" {
		fmt.Fprintf(stdout, "Linux localhost 4.19.157-perflab-sim #1 SMP PREEMPT %s\n", arch)
	} else {
		fmt.Fprintln(stdout, "Linux")
	}
	return 0
}

func cmdPidof(e *env, args []string, _ io.Reader, stdout, _ io.Writer) int {
	found := false
	for _, a := range args[1:] {
		if e.sh.Phone.Running(a) {
			fmt.Fprintln(stdout, 10000+len(a)*37)
			found = true
		}
		// The shell's own long-running processes (simpleperf record).
		for _, pid := range e.sh.procsNamed(a) {
			fmt.Fprintln(stdout, pid)
			found = true
		}
	}
	if found {
		return 0
	}
	return 1
}

func cmdTest(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	a := args[1:]
	if args[0] == "[" {
		if len(a) == 0 || a[len(a)-1] != "]" {
			fmt.Fprintln(stderr, "[: missing ]")
			return 2
		}
		a = a[:len(a)-1]
	}
	b := func(v bool) int {
		if v {
			return 0
		}
		return 1
	}
	switch len(a) {
	case 0:
		return 1
	case 1:
		return b(a[0] != "")
	case 2:
		p := Clean(e.cwd, a[1])
		info, err := e.sh.FS.Stat(p)
		switch a[0] {
		case "-e":
			return b(err == nil)
		case "-f":
			return b(err == nil && info.Mode&ModeDir == 0)
		case "-d":
			return b(err == nil && info.Mode&ModeDir != 0)
		case "-n":
			return b(a[1] != "")
		case "-z":
			return b(a[1] == "")
		case "!":
			return b(a[1] == "")
		}
	case 3:
		x, y := a[0], a[2]
		xi, _ := strconv.Atoi(x)
		yi, _ := strconv.Atoi(y)
		switch a[1] {
		case "=", "==":
			return b(x == y)
		case "!=":
			return b(x != y)
		case "-eq":
			return b(xi == yi)
		case "-ne":
			return b(xi != yi)
		case "-lt":
			return b(xi < yi)
		case "-gt":
			return b(xi > yi)
		case "-le":
			return b(xi <= yi)
		case "-ge":
			return b(xi >= yi)
		}
	}
	fmt.Fprintf(stderr, "test: unsupported expression: %s\n", strings.Join(a, " "))
	return 2
}

func cmdGetenforce(_ *env, _ []string, _ io.Reader, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, "Enforcing")
	return 0
}

// cmdAdvance is the simulated phone's own command: it lets SECONDS of
// simulated time pass with the phone idle (a cool-down that takes no wall
// time). Real phones do not have it.
func cmdAdvance(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: perflab-advance SECONDS")
		return 1
	}
	f, err := strconv.ParseFloat(args[1], 64)
	if err != nil || f < 0 {
		fmt.Fprintf(stderr, "perflab-advance: bad duration '%s'\n", args[1])
		return 1
	}
	e.sh.Phone.Advance(time.Duration(f * float64(time.Second)))
	return 0
}

// cmdWhich prints where each command lives, as toybox which does.
func cmdWhich(e *env, args []string, _ io.Reader, stdout, _ io.Writer) int {
	status := 0
	for _, a := range args[1:] {
		switch _, ok := builtins()[a]; {
		case a == "su" && !e.sh.NoSu():
			fmt.Fprintln(stdout, "/system/xbin/su")
		case a == "simpleperf" && e.sh.NoSimpleperf():
			status = 1
		case ok && a != "su" && a != "perflab-advance" && a != "exec":
			fmt.Fprintln(stdout, "/system/bin/"+a)
		default:
			status = 1
		}
	}
	return status
}
