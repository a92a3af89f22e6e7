package simdevice

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab/adb/wire"
)

type handler func(ctx context.Context, s *stream)

// service returns the handler for an OPEN request, or nil to refuse it.
func (c *conn) service(name string) handler {
	switch {
	case strings.HasPrefix(name, "shell"):
		opts, cmd, ok := strings.Cut(name, ":")
		if !ok {
			return nil
		}
		v2, pty := false, strings.TrimSpace(cmd) == ""
		for _, o := range strings.Split(opts, ",")[1:] {
			switch o {
			case "v2":
				v2 = true
			case "pty":
				pty = true
			case "raw":
				pty = false
			}
		}
		if v2 {
			return func(ctx context.Context, s *stream) { c.shellV2(ctx, s, cmd, pty) }
		}
		return func(ctx context.Context, s *stream) { c.shellV1(ctx, s, cmd, true) }
	case strings.HasPrefix(name, "exec:"):
		cmd := strings.TrimPrefix(name, "exec:")
		return func(ctx context.Context, s *stream) { c.shellV1(ctx, s, cmd, false) }
	case name == "sync:":
		return c.sync
	case strings.HasPrefix(name, "reverse:"):
		req := strings.TrimPrefix(name, "reverse:")
		return func(ctx context.Context, s *stream) { c.reverseService(s, req) }
	case name == "root:":
		return func(ctx context.Context, s *stream) {
			if c.srv.cfg.Root {
				io.WriteString(s, "adbd is already running as root\n")
			} else {
				io.WriteString(s, "adbd cannot run as root in production builds\n")
			}
		}
	}
	return nil
}

// shellV1 runs cmd with stdout and (when withStderr) stderr merged onto the
// stream, as the plain shell: and exec: services do. There is no exit code.
func (c *conn) shellV1(ctx context.Context, s *stream, cmd string, withStderr bool) {
	if strings.TrimSpace(cmd) == "" {
		c.interactive(ctx, s)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	out := &lockedWriter{w: s}
	var errw io.Writer = io.Discard
	if withStderr {
		errw = out
	}
	c.srv.dev.Shell(ctx, cmd, strings.NewReader(""), out, errw)
}

// interactive serves `adb shell` without a command over the plain
// protocol: a terminal-like prompt until exit or EOF.
func (c *conn) interactive(ctx context.Context, s *stream) {
	c.repl(ctx, s, &lockedWriter{w: s}, true)
}

// repl is the interactive shell: a prompt, line editing with echo when
// the host's terminal is raw (pty), one command per line, until exit,
// Ctrl-D on an empty line, or the end of input. It returns the last
// command's status.
func (c *conn) repl(ctx context.Context, in io.Reader, out io.Writer, pty bool) int {
	w := out
	if pty {
		w = crlfWriter{out}
	}
	prompt := func() { io.WriteString(w, "sim:/ # ") }
	status := 0
	var line []byte
	buf := make([]byte, 1024)
	prompt()
	esc := 0
	for {
		n, err := in.Read(buf)
		for _, b := range buf[:n] {
			switch {
			case esc > 0:
				// Skip the rest of an escape sequence (arrow keys).
				if esc == 1 && b == '[' || esc == 2 && (b < '@' || b > '~') {
					esc = 2
					continue
				}
				esc = 0
			case b == 0x1b:
				esc = 1
			case b == '\r' || b == '\n':
				if pty {
					io.WriteString(w, "\n")
				}
				cmd := strings.TrimSpace(string(line))
				line = line[:0]
				if cmd == "exit" {
					return status
				}
				if cmd != "" {
					status = c.srv.dev.Shell(ctx, cmd, strings.NewReader(""), w, w)
				}
				prompt()
			case b == 0x7f || b == 0x08:
				if len(line) > 0 {
					line = line[:len(line)-1]
					if pty {
						io.WriteString(w, "\b \b")
					}
				}
			case b == 0x03:
				line = line[:0]
				if pty {
					io.WriteString(w, "^C\n")
				}
				prompt()
			case b == 0x04 && len(line) == 0:
				return status
			case b >= 0x20 || b == '\t':
				line = append(line, b)
				if pty {
					w.Write([]byte{b})
				}
			}
		}
		if err != nil || ctx.Err() != nil {
			return status
		}
	}
}

// crlfWriter turns \n into \r\n for a raw terminal.
type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(p []byte) (int, error) {
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// packetWriter frames writes as shell v2 packets of one id.
type packetWriter struct {
	mu *sync.Mutex
	s  *stream
	id byte
}

func (p packetWriter) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	max := wire.MaxPayload - 5
	n := 0
	for len(b) > 0 {
		k := min(len(b), max)
		if _, err := p.s.Write(wire.AppendShellPacket(nil, p.id, b[:k])); err != nil {
			return n, err
		}
		n += k
		b = b[k:]
	}
	return n, nil
}

// shellV2 runs cmd with separate stdout and stderr packets and ends with the
// exit-code packet.
func (c *conn) shellV2(ctx context.Context, s *stream, cmd string, pty bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdinR, stdinW := io.Pipe()
	go func() {
		defer stdinW.Close()
		for {
			id, data, err := wire.ReadShellPacket(s, wire.MaxPayload*4)
			if err != nil {
				// The host closed the stream: stop the command.
				cancel()
				return
			}
			switch id {
			case wire.ShellStdin:
				if _, err := stdinW.Write(data); err != nil {
					// The command stopped reading; keep draining.
					continue
				}
			case wire.ShellCloseStdin:
				stdinW.Close()
			}
		}
	}()
	var mu sync.Mutex
	stdout := packetWriter{&mu, s, wire.ShellStdout}
	stderr := packetWriter{&mu, s, wire.ShellStderr}
	var code int
	if strings.TrimSpace(cmd) == "" {
		code = c.repl(ctx, stdinR, stdout, pty)
	} else {
		code = c.srv.dev.Shell(ctx, cmd, stdinR, stdout, stderr)
	}
	stdinR.Close()
	mu.Lock()
	s.Write(wire.AppendShellPacket(nil, wire.ShellExit, []byte{byte(code)}))
	mu.Unlock()
}

// reverseService handles reverse:forward, killforward, killforward-all and
// list-forward for this connection.
func (c *conn) reverseService(s *stream, req string) {
	fail := func(msg string) {
		s.Write(wire.AppendHexString([]byte("FAIL"), msg))
	}
	switch {
	case strings.HasPrefix(req, "forward:"):
		spec := strings.TrimPrefix(req, "forward:")
		norebind := false
		if strings.HasPrefix(spec, "norebind:") {
			norebind = true
			spec = strings.TrimPrefix(spec, "norebind:")
		}
		remote, local, ok := strings.Cut(spec, ";")
		if !ok {
			fail("malformed forward spec: " + spec)
			return
		}
		if _, err := tcpPort(remote); err != nil {
			fail(err.Error())
			return
		}
		if _, err := tcpPort(local); err != nil {
			fail(err.Error())
			return
		}
		c.mu.Lock()
		_, exists := c.reverses[remote]
		if exists && norebind {
			c.mu.Unlock()
			fail("cannot rebind existing socket")
			return
		}
		c.reverses[remote] = local
		c.mu.Unlock()
		c.logf("simdevice: reverse %s -> %s", remote, local)
		s.Write([]byte("OKAY"))
	case strings.HasPrefix(req, "killforward:"):
		remote := strings.TrimPrefix(req, "killforward:")
		c.mu.Lock()
		_, ok := c.reverses[remote]
		delete(c.reverses, remote)
		c.mu.Unlock()
		if !ok {
			fail("listener '" + remote + "' not found")
			return
		}
		s.Write([]byte("OKAY"))
	case req == "killforward-all":
		c.mu.Lock()
		c.reverses = map[string]string{}
		c.mu.Unlock()
		s.Write([]byte("OKAY"))
	case req == "list-forward":
		c.mu.Lock()
		keys := make([]string, 0, len(c.reverses))
		for k := range c.reverses {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "(reverse) %s %s\n", k, c.reverses[k])
		}
		c.mu.Unlock()
		// The device answers list-forward with the bare list (the OKAY
		// before it comes from the adb server).
		s.Write(wire.AppendHexString(nil, b.String()))
	default:
		fail("unknown reverse request: " + req)
	}
}

func tcpPort(spec string) (int, error) {
	p, ok := strings.CutPrefix(spec, "tcp:")
	if !ok {
		return 0, fmt.Errorf("only tcp: forwards are supported, not %q", spec)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return 0, fmt.Errorf("bad port in %q", spec)
	}
	return n, nil
}

// sync serves the file-transfer sub-protocol. Requests may arrive merged in
// one WRTE or split across several, so it parses a byte stream.
func (c *conn) sync(ctx context.Context, s *stream) {
	r := bufio.NewReaderSize(s, 64*1024)
	w := bufio.NewWriterSize(s, wire.SyncMaxData+8)
	defer w.Flush()
	dev := c.srv.dev
	for {
		id, n, err := wire.ReadSyncHeader(r)
		if err != nil {
			return
		}
		if id == wire.SyncQUIT {
			return
		}
		if n > 1024 {
			c.logf("simdevice: sync %s path of %d bytes", id, n)
			return
		}
		pb := make([]byte, n)
		if _, err := io.ReadFull(r, pb); err != nil {
			return
		}
		path := string(pb)
		switch id {
		case wire.SyncSTAT:
			var mode, size, mtime uint32
			if fi, ok := dev.Stat(path); ok {
				mode, size, mtime = fi.Mode, uint32(fi.Size), uint32(fi.Mtime.Unix())
			}
			b := wire.AppendSync(nil, wire.SyncSTAT, mode, nil)
			b = appendU32(b, size)
			b = appendU32(b, mtime)
			w.Write(b)
		case wire.SyncSTA2, wire.SyncLST2:
			st := wire.Stat2{Error: 2} // ENOENT
			if fi, ok := dev.Stat(path); ok {
				st = wire.Stat2{Mode: fi.Mode, Nlink: 1, Size: uint64(fi.Size), Atime: fi.Mtime.Unix(),
					Mtime: fi.Mtime.Unix(), Ctime: fi.Mtime.Unix(), Ino: inode(path), Dev: 0xfd00}
			}
			w.Write(wire.AppendStat2(nil, id, st))
		case wire.SyncLIST:
			ents, err := dev.ReadDir(path)
			if err == nil {
				for _, e := range ents {
					b := wire.AppendSync(nil, wire.SyncDENT, e.Mode, nil)
					b = appendU32(b, uint32(e.Size))
					b = appendU32(b, uint32(e.Mtime.Unix()))
					b = appendU32(b, uint32(len(e.Name)))
					b = append(b, e.Name...)
					w.Write(b)
				}
			}
			w.Write(append(wire.AppendSync(nil, wire.SyncDONE, 0, nil), make([]byte, 12)...))
		case wire.SyncSEND:
			if err := c.syncRecvFile(r, path); err != nil {
				w.Write(wire.AppendSync(nil, wire.SyncFAIL, uint32(len(err.Error())), []byte(err.Error())))
				w.Flush()
				return
			}
			w.Write(wire.AppendSync(nil, wire.SyncOKAY, 0, nil))
		case wire.SyncRECV:
			data, err := dev.ReadFile(path)
			if err != nil {
				msg := err.Error()
				w.Write(wire.AppendSync(nil, wire.SyncFAIL, uint32(len(msg)), []byte(msg)))
				w.Flush()
				return
			}
			for len(data) > 0 {
				k := min(len(data), wire.SyncMaxData)
				w.Write(wire.AppendSync(nil, wire.SyncDATA, uint32(k), data[:k]))
				data = data[k:]
			}
			w.Write(wire.AppendSync(nil, wire.SyncDONE, 0, nil))
		default:
			msg := "unknown sync command " + strconvQuote(id)
			w.Write(wire.AppendSync(nil, wire.SyncFAIL, uint32(len(msg)), []byte(msg)))
			w.Flush()
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// syncRecvFile reads the DATA…DONE sequence after SEND "path,mode".
func (c *conn) syncRecvFile(r io.Reader, spec string) error {
	path, modeStr, ok := cutLast(spec, ",")
	if !ok {
		return fmt.Errorf("SEND %q: missing mode", spec)
	}
	mode, err := strconv.ParseUint(modeStr, 10, 32)
	if err != nil {
		return fmt.Errorf("SEND %q: bad mode", spec)
	}
	var data []byte
	var failure error
	for {
		id, n, err := wire.ReadSyncHeader(r)
		if err != nil {
			return err
		}
		switch id {
		case wire.SyncDATA:
			if n > wire.SyncMaxData {
				return fmt.Errorf("DATA chunk of %d bytes exceeds %d", n, wire.SyncMaxData)
			}
			chunk := make([]byte, n)
			if _, err := io.ReadFull(r, chunk); err != nil {
				return err
			}
			data = append(data, chunk...)
		case wire.SyncDONE:
			if failure != nil {
				return failure
			}
			return c.srv.dev.WriteFile(path, data, uint32(mode), time.Unix(int64(n), 0))
		default:
			return fmt.Errorf("unexpected %s during SEND", strconvQuote(id))
		}
	}
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func inode(path string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(path); i++ {
		h ^= uint64(path[i])
		h *= 1099511628211
	}
	return h
}

func strconvQuote(s string) string { return strconv.Quote(s) }
