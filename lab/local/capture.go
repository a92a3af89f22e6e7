package local

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// capture holds a trial's stdout and stderr in memory-backed files
// (memfd) that the command writes to directly. Unlike pipes they need no
// goroutines copying while the command runs, which matters at thousands of
// millisecond trials. Each trial gets new files, so a process that outlives
// its trial writes only into its own trial's, never into a later one's
// (Device.takeCapture reuses files only when they are empty and nothing of
// their trial is left). A command that prints gigabytes should send its
// output elsewhere itself.
type capture struct {
	stdin, stdout, stderr *os.File // stdin is the device's /dev/null, not closed here
	written               bool     // something was written to stdout or stderr
	fds                   [2]int   // stdout's and stderr's, for empty
}

func newCapture(stdin *os.File) (*capture, error) {
	c := &capture{stdin: stdin}
	var err error
	if c.stdout, err = memFile("perflab-stdout"); err == nil {
		c.stderr, err = memFile("perflab-stderr")
	}
	if err != nil {
		c.close()
		return nil, err
	}
	c.fds = [2]int{int(c.stdout.Fd()), int(c.stderr.Fd())}
	return c, nil
}

// empty reports whether the command printed nothing at all, the common
// case, in two fstat calls on the descriptors themselves (no os.File
// layers): the files stay open as long as the capture.
func (c *capture) empty() bool {
	for _, fd := range c.fds {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Size != 0 {
			return false
		}
	}
	return true
}

// memFile returns an anonymous memory-backed file, or an unlinked temporary
// file where memfd_create is missing.
func memFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err == nil {
		return os.NewFile(uintptr(fd), name), nil
	}
	f, err := os.CreateTemp("", name+"-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// copyStdout streams what the command printed on stdout into w.
func (c *capture) copyStdout(w io.Writer) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for off := int64(0); ; {
		n, err := c.stdout.ReadAt(buf, off)
		if n > 0 {
			c.written = true
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			off += int64(n)
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}

// stderrTail returns the last n bytes the command printed on stderr.
func (c *capture) stderrTail(n int64) string {
	st, err := c.stderr.Stat()
	if err != nil || st.Size() == 0 {
		return ""
	}
	c.written = true
	off := max(0, st.Size()-n)
	b := make([]byte, st.Size()-off)
	k, _ := c.stderr.ReadAt(b, off)
	return string(b[:k])
}

func (c *capture) close() {
	for _, f := range []*os.File{c.stdout, c.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// takeCapture returns the spare output files, or new ones.
func (d *Device) takeCapture(stdin *os.File) (*capture, error) {
	d.mu.Lock()
	c := d.spare
	d.spare = nil
	d.mu.Unlock()
	if c != nil && c.stdin == stdin {
		return c, nil
	}
	if c != nil {
		c.close()
	}
	return newCapture(stdin)
}
