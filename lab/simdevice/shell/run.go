package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// env is the state of one running shell (one adb shell command, or a
// nested sh -c / su -c), and of one command it runs: the interpreter is
// mvdan.cc/sh's, and each simulated command gets a copy of env with the
// interpreter's current directory, variables and standard streams.
type env struct {
	sh     *Shell
	ctx    context.Context
	pid    int // $$
	uid    int
	cwd    string
	vars   map[string]string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// Run executes a command line as adbd's user and returns the exit status.
func (sh *Shell) Run(ctx context.Context, cmdline string, stdin io.Reader, stdout, stderr io.Writer) int {
	uid := 2000
	if sh.Root {
		uid = 0
	}
	e := &env{sh: sh, ctx: ctx, pid: sh.newPid(), uid: uid, cwd: "/", vars: map[string]string{
		"PATH": "/product/bin:/apex/com.android.runtime/bin:/system/bin:/system/xbin:/vendor/bin",
		"HOME": "/", "SHELL": "/system/bin/sh", "TMPDIR": "/data/local/tmp",
	}, stdin: stdin, stdout: stdout, stderr: stderr}
	return e.runLine(cmdline)
}

func (e *env) errf(format string, args ...any) {
	fmt.Fprintf(e.stderr, format, args...)
}

// pidVar is the variable $$ is rewritten to: mvdan.cc/sh answers $$ with
// the host's process ID, the simulated phone with its own.
const pidVar = "PERFLAB_SHELL_PID"

// parseLine parses a command line as mksh does, in the wording of
// Android's shell for syntax errors, refusing background jobs.
func parseLine(line string) (*syntax.File, error) {
	p := syntax.NewParser(syntax.Variant(syntax.LangMirBSDKorn))
	f, err := p.Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, syntaxError(err)
	}
	var bg bool
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Background || n.Coprocess {
				bg = true
			}
		case *syntax.ParamExp:
			if n.Param != nil && n.Param.Value == "$" {
				n.Param.Value = pidVar
			}
		}
		return !bg
	})
	if bg {
		return nil, errors.New("syntax error: background jobs ('&') are not supported")
	}
	return f, nil
}

// syntaxError words a parse error as the simulated shell always has.
func syntaxError(err error) error {
	var pe syntax.ParseError
	var le syntax.LangError
	switch {
	case errors.As(err, &pe):
		text := pe.Text
		switch {
		case strings.Contains(text, "without closing quote"):
			q := "'"
			if strings.HasSuffix(text, "`\"`") {
				q = `"`
			}
			return fmt.Errorf("syntax error: unterminated %s", q)
		case strings.Contains(text, "reached EOF"), strings.Contains(text, "must be followed by"):
			if strings.Contains(text, "{") {
				return errors.New("syntax error: missing '}'")
			}
			if strings.Contains(text, "(") {
				return errors.New("syntax error: missing ')'")
			}
			return errors.New("syntax error: unexpected end of line")
		}
		if strings.Contains(text, "encountered") || strings.HasPrefix(text, "`") {
			if _, rest, ok := strings.Cut(text, "`"); ok {
				if tok, _, ok := strings.Cut(rest, "`"); ok {
					return fmt.Errorf("syntax error: unexpected '%s'", tok)
				}
			}
		}
		return fmt.Errorf("syntax error: %s", text)
	case errors.As(err, &le):
		return fmt.Errorf("syntax error: %s", le.Feature)
	}
	return fmt.Errorf("syntax error: %v", err)
}

func (e *env) runLine(line string) int { return e.runScript(line, nil) }

// runScript runs a script in a new interpreter over e's state, with
// positional parameters params.
func (e *env) runScript(src string, params []string) int {
	f, err := parseLine(src)
	if err != nil {
		e.errf("/system/bin/sh: %v\n", err)
		return 2
	}
	pairs := make([]string, 0, len(e.vars)+3)
	for k, v := range e.vars {
		pairs = append(pairs, k+"="+v)
	}
	pairs = append(pairs, pidVar+"="+strconv.Itoa(e.pid), "UID="+strconv.Itoa(e.uid), "EUID="+strconv.Itoa(e.uid))
	r, err := interp.New(
		interp.Env(expand.ListEnviron(pairs...)),
		interp.Dir("/"),
		// The simulated shell expands no globs: arguments reach commands as written.
		interp.Params(append([]string{"-f", "--"}, params...)...),
		interp.StdIO(nil, e.stdout, e.stderr),
		interp.CallHandler(e.call),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return e.execHandler }),
		interp.OpenHandler(e.open),
		interp.StatHandler(e.stat),
		interp.ReadDirHandler2(e.readDir),
		interp.AccessHandler(func(context.Context, string, interp.AccessMode) error { return nil }),
	)
	if err != nil {
		e.errf("/system/bin/sh: %v\n", err)
		return 2
	}
	r.Dir = e.cwd
	err = r.Run(e.ctx, f)
	var st interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &st):
		return int(st)
	case e.ctx.Err() != nil:
		return 130
	}
	e.errf("/system/bin/sh: %v\n", err)
	return 1
}

// builtinPrefix marks a call the CallHandler sends to perflab's own
// command instead of mvdan.cc/sh's builtin of that name.
const builtinPrefix = "\x00perflab:"

// ownBuiltins are the builtins perflab answers itself, as Android's shell
// and toybox do.
var ownBuiltins = map[string]bool{"echo": true, "test": true, "[": true, "kill": true}

// call routes perflab's own builtins to the exec handler, and answers a
// failing cd as Android's shell does.
func (e *env) call(ctx context.Context, args []string) ([]string, error) {
	if len(args) == 0 {
		return args, nil
	}
	if ownBuiltins[args[0]] {
		return append([]string{builtinPrefix + args[0]}, args[1:]...), nil
	}
	if args[0] == "cd" && len(args) > 1 {
		hc := interp.HandlerCtx(ctx)
		info, err := e.sh.FS.Stat(Clean(hc.Dir, args[1]))
		if err != nil || info.Mode&ModeDir == 0 {
			return []string{builtinPrefix + "cd-fail", args[1]}, nil
		}
		return []string{"cd", Clean(hc.Dir, args[1])}, nil
	}
	return args, nil
}

// at is e as a command sees it: the interpreter's directory, variables
// and streams.
func (e *env) at(hc interp.HandlerContext) *env {
	vars := map[string]string{}
	for name, v := range hc.Env.Each {
		if v.IsSet() && v.Kind == expand.String && name != pidVar {
			vars[name] = v.Str
		}
	}
	c := &env{sh: e.sh, ctx: e.ctx, pid: e.pid, uid: e.uid, cwd: hc.Dir, vars: vars,
		stdin: hc.Stdin, stdout: hc.Stdout, stderr: hc.Stderr}
	if c.stdin == nil || c.stdin == (*os.File)(nil) {
		c.stdin = e.stdin
	}
	if c.cwd == "" {
		c.cwd = "/"
	}
	return c
}

// execHandler runs a simulated command, then makes the kernel writes of
// its redirections happen, failing the command when the kernel refuses.
func (e *env) execHandler(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	c := e.at(hc)
	var status int
	if name, ok := strings.CutPrefix(args[0], builtinPrefix); ok {
		if name == "cd-fail" {
			fmt.Fprintf(c.stderr, "/system/bin/sh: cd: %s: No such file or directory\n", args[1])
			status = 2
		} else {
			status = c.exec(append([]string{name}, args[1:]...), c.stdin, c.stdout, c.stderr)
		}
	} else {
		status = c.exec(args, c.stdin, c.stdout, c.stderr)
	}
	for _, w := range []io.Writer{hc.Stdout, hc.Stderr} {
		if fw, ok := w.(*fileWriter); ok {
			if err := fw.flush(); err != nil {
				fmt.Fprintf(hc.Stderr, "/system/bin/sh: %v\n", err)
				status = 1
			}
		}
	}
	if status != 0 {
		return interp.ExitStatus(uint8(status))
	}
	return nil
}

// open opens a redirection's file in the simulated file system.
func (e *env) open(ctx context.Context, name string, flag int, _ os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	p := Clean(hc.Dir, name)
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		if name == "/dev/null" {
			return nopCloser{Reader: strings.NewReader("")}, nil
		}
		data, err := e.sh.FS.ReadFile(p)
		if err != nil {
			return nil, &os.PathError{Op: "/system/bin/sh: can't open", Path: "'" + name + "'", Err: err}
		}
		return nopCloser{Reader: strings.NewReader(string(data))}, nil
	}
	if name == "/dev/null" {
		return nopCloser{Writer: io.Discard}, nil
	}
	w := &fileWriter{e: e, path: p, appendTo: flag&os.O_APPEND != 0, kernel: isKernelPath(p), stderr: hc.Stderr}
	if err := w.check(); err != nil {
		return nil, &os.PathError{Op: "/system/bin/sh: can't create", Path: name, Err: err}
	}
	return w, nil
}

type nopCloser struct {
	io.Reader
	io.Writer
}

func (nopCloser) Close() error { return nil }

// stat and readDir answer mvdan.cc/sh from the simulated file system.
func (e *env) stat(_ context.Context, name string, _ bool) (fs.FileInfo, error) {
	info, err := e.sh.FS.Stat(name)
	if err != nil {
		return nil, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return fileInfo{info}, nil
}

func (e *env) readDir(_ context.Context, name string) ([]fs.DirEntry, error) {
	list, err := e.sh.FS.ReadDir(name)
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: err}
	}
	out := make([]fs.DirEntry, len(list))
	for i, info := range list {
		out[i] = fs.FileInfoToDirEntry(fileInfo{info})
	}
	return out, nil
}

// fileInfo is an Info as an fs.FileInfo.
type fileInfo struct{ i Info }

func (fi fileInfo) Name() string       { return fi.i.Name }
func (fi fileInfo) Size() int64        { return fi.i.Size }
func (fi fileInfo) ModTime() time.Time { return fi.i.Mtime }
func (fi fileInfo) IsDir() bool        { return fi.i.Mode&ModeDir != 0 }
func (fi fileInfo) Sys() any           { return nil }
func (fi fileInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.i.Mode & 0o777)
	if fi.IsDir() {
		m |= fs.ModeDir
	}
	return m
}

// fileWriter is a redirection's file, written after each command with
// what it printed (a sysfs value in one write, as echo does), the write
// error failing the command as write(2) does; what is left (a builtin of
// mvdan.cc/sh's printed it) is written when the redirection closes.
type fileWriter struct {
	e        *env
	path     string
	appendTo bool
	kernel   bool
	stderr   io.Writer
	buf      []byte
	flushed  bool
}

func (w *fileWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *fileWriter) Read([]byte) (int, error) { return 0, io.EOF }

func (w *fileWriter) Close() error {
	if w.flushed && len(w.buf) == 0 {
		return nil
	}
	if err := w.flush(); err != nil {
		fmt.Fprintf(w.stderr, "/system/bin/sh: %v\n", err)
	}
	return nil
}

func (w *fileWriter) check() error {
	if w.kernel {
		if _, err := w.e.sh.FS.Stat(w.path); err != nil {
			return err
		}
		if w.e.uid != 0 {
			return ErrPermission
		}
		return nil
	}
	if info, err := w.e.sh.FS.Stat(w.path); err == nil && info.Mode&ModeDir != 0 {
		return ErrIsDir
	}
	return nil
}

func (w *fileWriter) flush() error {
	buf := w.buf
	w.buf, w.flushed = nil, true
	if w.kernel {
		if err := w.e.sh.Phone.WriteFile(w.path, buf); err != nil {
			return fmt.Errorf("write error: %v", errText(err))
		}
		return nil
	}
	err := w.e.sh.FS.WriteFile(w.path, buf, 0o644, w.e.uid, w.appendTo)
	w.appendTo = true // what the next command writes follows
	if err != nil {
		return fmt.Errorf("can't create %s: %v", w.path, err)
	}
	return nil
}
