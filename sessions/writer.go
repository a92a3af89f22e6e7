package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
)

// Writer appends events to a session file. Every event is written with one
// write call as soon as it arrives, so killing perflab loses nothing
// written. After the header and each trial, end, settings, toggle or note
// event the file is also synced to disk (fsync) by a background goroutine
// while the run goes on, at most once per MinSyncInterval, so a power cut
// loses at most the trials of the last 20 ms and the sync costs the run no
// time.
// Close syncs and waits.
// A Writer is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	path string
	buf  []byte
	err  error

	syncReq  chan struct{} // capacity 1: a sync is wanted
	closing  chan struct{} // closed by Close
	syncDone chan struct{} // closed when the syncer has stopped
	syncMu   sync.Mutex
	syncErr  error
}

// Create creates a new session file at path (its directory too) and writes
// the header. It refuses to overwrite an existing file; use CreateOverwrite
// to replace one on purpose.
func Create(path string, h Header) (*Writer, error) {
	return create(path, h, os.O_EXCL)
}

// CreateOverwrite is Create that replaces an existing file.
func CreateOverwrite(path string, h Header) (*Writer, error) {
	return create(path, h, os.O_TRUNC)
}

func create(path string, h Header, mode int) (*Writer, error) {
	if h.Format == "" {
		h.Format = Format
	}
	if h.Version == 0 {
		h.Version = Version
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := MkdirPrivate(dir); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|mode, FileMode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s already exists; choose another --out or remove it (a session is never overwritten silently)", path)
		}
		return nil, err
	}
	if err := Private(f); err != nil { // an overwritten file keeps its old mode
		f.Close()
		return nil, err
	}
	w := &Writer{f: f, path: path}
	line, err := json.Marshal(h)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := w.writeLine(line, false); err != nil {
		f.Close()
		return nil, err
	}
	// The header is synced by the syncer, like the events after it, while
	// the run sets up: the first trial need not wait for the disk.
	w.syncReq = make(chan struct{}, 1)
	w.closing = make(chan struct{})
	w.syncDone = make(chan struct{})
	w.syncReq <- struct{}{}
	go w.syncer()
	return w, nil
}

// Sessions and proxy recordings hold what the build under test did and
// sent (URLs, headers, response bodies): only their owner may read them.
const (
	FileMode = 0o600 // session files and recordings
	DirMode  = 0o700 // session folders perflab creates
)

// MkdirPrivate creates dir and its missing parents with DirMode. perflab's
// own session folder (…/perflab/sessions, and the perflab folder above
// it) is also narrowed to DirMode when an earlier perflab left it open to
// others; any other existing folder is the user's choice and left as is.
func MkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if filepath.Base(dir) != "sessions" || filepath.Base(parent) != "perflab" {
		return nil
	}
	for _, d := range []string{dir, parent} {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(d, st.Mode().Perm()&DirMode); err != nil {
				return fmt.Errorf("making %s private: %w", d, err)
			}
		}
	}
	return nil
}

// Private narrows an open file perflab writes to FileMode.
func Private(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := f.Chmod(st.Mode().Perm() & FileMode); err != nil {
		return fmt.Errorf("making %s private: %w", f.Name(), err)
	}
	return nil
}

// Path returns the file the writer appends to.
func (w *Writer) Path() string { return w.path }

// Write appends one event. A trial event, written between two trials, is
// encoded by appendTrialEvent straight into the writer's buffer; any other
// event by encoding/json. The bytes are the same.
func (w *Writer) Write(e lab.Event) error {
	if done, err := w.writeTrial(e); done {
		return err
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("session %s: encoding %s event: %w", w.path, e.Type, err)
	}
	return w.writeLine(line, syncs(e.Type))
}

// writeTrial writes e if appendTrialEvent can encode it, and reports
// whether it did (or failed to for a reason other than encoding).
func (w *Writer) writeTrial(e lab.Event) (done bool, err error) {
	if e.Type != lab.EventTrial {
		return false, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	line, ok := appendTrialEvent(w.buf[:0], e)
	w.buf = line[:0] // keep what the buffer grew to either way
	if !ok {
		return false, nil // encoding/json encodes it, or says why not
	}
	if err := w.writable(); err != nil {
		return true, err
	}
	w.buf = append(line, '\n')
	return true, w.flush(syncs(e.Type))
}

// syncs reports whether events of type typ are synced to disk when written.
// Probe samples arrive many times a second and are only written; the next
// synced event carries them to disk.
func syncs(typ string) bool { return typ != lab.EventProbe }

func (w *Writer) writeLine(line []byte, sync bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writable(); err != nil {
		return err
	}
	w.buf = append(append(w.buf[:0], line...), '\n')
	return w.flush(sync)
}

// writable reports why nothing may be written now: an earlier write or
// sync failed, or the writer is closed. w.mu is held.
func (w *Writer) writable() error {
	if w.err != nil {
		return w.err
	}
	if w.f == nil {
		return fmt.Errorf("session %s: write after close", w.path)
	}
	if err := w.lastSyncErr(); err != nil {
		w.err = err
		return err
	}
	return nil
}

// flush writes w.buf, one line, with one write call and asks the syncer
// for a sync if sync is set. w.mu is held.
func (w *Writer) flush(sync bool) error {
	if _, err := w.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("session %s: %w", w.path, err)
		return w.err
	}
	if sync && w.syncReq != nil {
		select {
		case w.syncReq <- struct{}{}:
		default: // a sync is already pending; it will cover this line
		}
	}
	return nil
}

// MinSyncInterval spaces background syncs: trials that finish within it of
// the last sync share the next one. Real trials are longer, so each gets
// its own sync; thousands of sub-millisecond trials do not pay one each.
const MinSyncInterval = 20 * time.Millisecond

// syncer fsyncs the file whenever asked, off the writer's path.
func (w *Writer) syncer() {
	defer close(w.syncDone)
	var last time.Time
	timer := time.NewTimer(0)
	<-timer.C
	for range w.syncReq {
		if wait := MinSyncInterval - time.Since(last); wait > 0 {
			// Requests arriving meanwhile coalesce into this sync; Close
			// cuts the wait short (it syncs itself).
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-w.closing:
				return
			}
		}
		last = time.Now()
		if err := w.f.Sync(); err != nil {
			w.syncMu.Lock()
			if w.syncErr == nil {
				w.syncErr = fmt.Errorf("session %s: sync: %w", w.path, err)
			}
			w.syncMu.Unlock()
		}
	}
}

func (w *Writer) lastSyncErr() error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	return w.syncErr
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	close(w.closing)
	close(w.syncReq)
	<-w.syncDone
	err := w.f.Sync()
	if serr := w.lastSyncErr(); serr != nil && w.err == nil {
		w.err = serr
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if w.err != nil {
		return w.err
	}
	return err
}
