package shell

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The simulated phone's file commands: chmod, rm, cp, mv, mkdir, touch,
// ls, mount, umount, chown, stat, restorecon.

func parseMode(s string, old uint32) (uint32, bool) {
	if n, err := strconv.ParseUint(s, 8, 32); err == nil {
		return uint32(n), true
	}
	// Symbolic: [ugoa]*[+-=][rwx]+
	who := strings.TrimRight(s, "+-=rwx")
	i := len(who)
	if i >= len(s) {
		return 0, false
	}
	op, perms := s[i], s[i+1:]
	var bits uint32
	for _, c := range perms {
		switch c {
		case 'r':
			bits |= 0o444
		case 'w':
			bits |= 0o222
		case 'x':
			bits |= 0o111
		default:
			return 0, false
		}
	}
	var mask uint32 = 0o777
	if who != "" && who != "a" {
		mask = 0
		for _, c := range who {
			switch c {
			case 'u':
				mask |= 0o700
			case 'g':
				mask |= 0o070
			case 'o':
				mask |= 0o007
			default:
				return 0, false
			}
		}
	}
	bits &= mask
	switch op {
	case '+':
		return old | bits, true
	case '-':
		return old &^ bits, true
	default:
		return old&^mask | bits, true
	}
}

func cmdChmod(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	args = args[1:]
	if len(args) > 0 && args[0] == "-R" {
		args = args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(stderr, "chmod: needs 2 arguments")
		return 1
	}
	status := 0
	for _, f := range args[1:] {
		p := Clean(e.cwd, f)
		if isKernelPath(p) {
			// sysfs permissions are the kernel's; accept as root.
			if e.uid != 0 {
				fmt.Fprintf(stderr, "chmod: %s: Operation not permitted\n", f)
				status = 1
			}
			continue
		}
		info, err := e.sh.FS.Stat(p)
		if err != nil {
			fmt.Fprintf(stderr, "chmod: %s: %v\n", f, err)
			status = 1
			continue
		}
		m, ok := parseMode(args[0], info.Mode&0o7777)
		if !ok {
			fmt.Fprintf(stderr, "chmod: bad mode '%s'\n", args[0])
			return 1
		}
		if err := e.sh.FS.Chmod(p, m, e.uid); err != nil {
			fmt.Fprintf(stderr, "chmod: %s: %v\n", f, err)
			status = 1
		}
	}
	return status
}

// flags splits leading single-letter options from operands.
func flags(args []string) (map[rune]bool, []string) {
	f := map[rune]bool{}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		for _, c := range a[1:] {
			f[c] = true
		}
	}
	return f, args[i:]
}

func cmdRm(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	f, paths := flags(args[1:])
	status := 0
	for _, p := range paths {
		err := e.sh.FS.Remove(Clean(e.cwd, p), f['r'] || f['R'], e.uid)
		if err != nil && !(f['f'] && errors.Is(err, ErrNotExist)) {
			fmt.Fprintf(stderr, "rm: %s: %v\n", p, err)
			status = 1
		}
	}
	return status
}

func cmdCp(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	f, ops := flags(args[1:])
	if len(ops) < 2 {
		fmt.Fprintln(stderr, "cp: needs 2 arguments")
		return 1
	}
	dst := Clean(e.cwd, ops[len(ops)-1])
	status := 0
	for _, s := range ops[:len(ops)-1] {
		if err := e.sh.FS.Copy(Clean(e.cwd, s), dst, f['a'] || f['r'] || f['R'], e.uid); err != nil {
			fmt.Fprintf(stderr, "cp: %v\n", err)
			status = 1
		}
	}
	return status
}

func cmdMv(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	_, ops := flags(args[1:])
	if len(ops) != 2 {
		fmt.Fprintln(stderr, "mv: needs 2 arguments")
		return 1
	}
	if err := e.sh.FS.Rename(Clean(e.cwd, ops[0]), Clean(e.cwd, ops[1]), e.uid); err != nil {
		fmt.Fprintf(stderr, "mv: %s: %v\n", ops[0], err)
		return 1
	}
	return 0
}

func cmdMkdir(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	args = args[1:]
	parents := false
	var mode uint32 = 0o777
	var dirs []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-p":
			parents = true
		case args[i] == "-m" && i+1 < len(args):
			m, _ := strconv.ParseUint(args[i+1], 8, 32)
			mode = uint32(m)
			i++
		default:
			dirs = append(dirs, args[i])
		}
	}
	status := 0
	for _, d := range dirs {
		p := Clean(e.cwd, d)
		var err error
		if parents {
			err = e.sh.FS.MkdirAll(p, mode, e.uid)
		} else {
			err = e.sh.FS.Mkdir(p, mode, e.uid)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mkdir: '%s': %v\n", d, err)
			status = 1
		}
	}
	return status
}

func cmdTouch(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	for _, a := range args[1:] {
		p := Clean(e.cwd, a)
		if err := e.sh.FS.WriteFile(p, nil, 0o644, e.uid, true); err != nil {
			fmt.Fprintf(stderr, "touch: '%s': %v\n", a, err)
			return 1
		}
	}
	return 0
}

func modeString(m uint32) string {
	b := []byte("-rwxrwxrwx")
	if m&ModeDir != 0 {
		b[0] = 'd'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	return string(b)
}

func cmdLs(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f, paths := flags(args[1:])
	if len(paths) == 0 {
		paths = []string{"."}
	}
	status := 0
	show := func(i Info) {
		if f['l'] {
			fmt.Fprintf(stdout, "%s 1 root root %8d %s %s\n", modeString(i.Mode), i.Size, i.Mtime.Format("2006-01-02 15:04"), i.Name)
		} else {
			fmt.Fprintln(stdout, i.Name)
		}
	}
	for _, a := range paths {
		p := Clean(e.cwd, a)
		info, err := e.sh.FS.Stat(p)
		if err != nil {
			fmt.Fprintf(stderr, "ls: %s: %v\n", a, err)
			status = 1
			continue
		}
		if info.Mode&ModeDir == 0 || f['d'] {
			info.Name = a
			show(info)
			continue
		}
		ents, _ := e.sh.FS.ReadDir(p)
		for _, i := range ents {
			if strings.HasPrefix(i.Name, ".") && !f['a'] {
				continue
			}
			show(i)
		}
	}
	return status
}

func cmdMount(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 {
		for _, m := range e.sh.FS.Mounts() {
			fmt.Fprintf(stdout, "%s on %s type %s (%s)\n", m.Source, m.Target, m.Type, m.Options)
		}
		return 0
	}
	var typ, opts string
	var ops []string
	for i := 1; i < len(args); i++ {
		switch {
		case args[i] == "-t" && i+1 < len(args):
			typ = args[i+1]
			i++
		case args[i] == "-o" && i+1 < len(args):
			opts = args[i+1]
			i++
		default:
			ops = append(ops, args[i])
		}
	}
	if e.uid != 0 {
		fmt.Fprintln(stderr, "mount: need root")
		return 1
	}
	if typ != "tmpfs" || len(ops) != 2 {
		fmt.Fprintln(stderr, "mount: the simulated phone mounts only tmpfs: mount -t tmpfs [-o OPTS] SOURCE DIR")
		return 1
	}
	if err := e.sh.FS.MountTmpfs(ops[0], Clean(e.cwd, ops[1]), opts); err != nil {
		fmt.Fprintf(stderr, "mount: %v\n", err)
		return 1
	}
	return 0
}

func cmdUmount(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	if e.uid != 0 {
		fmt.Fprintln(stderr, "umount: need root")
		return 1
	}
	_, ops := flags(args[1:])
	if len(ops) != 1 {
		fmt.Fprintln(stderr, "usage: umount DIR")
		return 1
	}
	if err := e.sh.FS.Unmount(Clean(e.cwd, ops[0])); err != nil {
		fmt.Fprintf(stderr, "umount: %v\n", err)
		return 1
	}
	return 0
}

// appUID is the owner the simulated phone reports for files under an app's
// data directory (it keeps no owners; real phones give each app its own).
const appUID = 10123

func ownerOf(p string) (int, string) {
	if strings.HasPrefix(p, "/data/data/") {
		return appUID, "u0_a123"
	}
	if strings.HasPrefix(p, "/data/local/tmp") || strings.HasPrefix(p, "/sdcard") {
		return 2000, "shell"
	}
	return 0, "root"
}

// cmdChown checks its arguments as toybox does; the simulated file system
// keeps no owners, so a valid chown by root changes nothing.
func cmdChown(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	_, ops := flags(args[1:])
	if len(ops) < 2 {
		fmt.Fprintln(stderr, "chown: needs 2 arguments")
		return 1
	}
	status := 0
	for _, f := range ops[1:] {
		if _, err := e.sh.FS.Stat(Clean(e.cwd, f)); err != nil {
			fmt.Fprintf(stderr, "chown: %s: %v\n", f, err)
			status = 1
			continue
		}
		if e.uid != 0 {
			fmt.Fprintf(stderr, "chown: %s: Operation not permitted\n", f)
			status = 1
		}
	}
	return status
}

// cmdStat supports stat -c FORMAT with %n %s %a %u %g %U %G %F.
func cmdStat(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	format := "  File: %n\n  Size: %s\n"
	var files []string
	for i := 1; i < len(args); i++ {
		if args[i] == "-c" && i+1 < len(args) {
			format = args[i+1] + "\n"
			i++
			continue
		}
		files = append(files, args[i])
	}
	status := 0
	for _, f := range files {
		p := Clean(e.cwd, f)
		info, err := e.sh.FS.Stat(p)
		if err != nil {
			fmt.Fprintf(stderr, "stat: '%s': %v\n", f, err)
			status = 1
			continue
		}
		uid, name := ownerOf(p)
		kind := "regular file"
		if info.Mode&ModeDir != 0 {
			kind = "directory"
		}
		r := strings.NewReplacer("%n", f, "%s", strconv.FormatInt(info.Size, 10), "%a", strconv.FormatUint(uint64(info.Mode&0o7777), 8),
			"%u", strconv.Itoa(uid), "%g", strconv.Itoa(uid), "%U", name, "%G", name, "%F", kind)
		io.WriteString(stdout, r.Replace(format))
	}
	return status
}

// cmdRestorecon accepts existing paths (the simulated phone has no
// SELinux labels to restore).
func cmdRestorecon(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	_, ops := flags(args[1:])
	for _, f := range ops {
		if _, err := e.sh.FS.Stat(Clean(e.cwd, f)); err != nil {
			fmt.Fprintf(stderr, "restorecon: %s: %v\n", f, err)
			return 1
		}
	}
	return 0
}
