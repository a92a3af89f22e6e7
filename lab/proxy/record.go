package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// FileFormat is the "format" value of a recording's first line.
const FileFormat = "perflab-proxy"

// FileVersion is the recording format version this package writes.
const FileVersion = 1

// fileHeader is the first line of a recording.
type fileHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// Exchange is one recorded request/response pair: one line of a recording.
// The request body is stored only as its hash; the response is stored whole
// so it can be served again byte for byte.
type Exchange struct {
	Build      string      `json:"build,omitempty"` // build key ("control", "treatment") that made the request
	Trial      int         `json:"trial"`           // trial index during which it was recorded
	Seq        int         `json:"seq"`             // order within that trial
	Method     string      `json:"method"`
	URL        string      `json:"url"` // absolute URL as requested
	ReqHeader  http.Header `json:"req_header,omitempty"`
	BodySHA256 string      `json:"body_sha256"`
	BodyLen    int64       `json:"body_len"`
	Status     int         `json:"status"`
	Header     http.Header `json:"header,omitempty"`
	Body       []byte      `json:"body,omitempty"` // base64 in JSON
	TTFBMs     float64     `json:"ttfb_ms"`        // request sent to response headers received
	TotalMs    float64     `json:"total_ms"`       // request sent to last body byte received
}

// LineError is a line of a recording that could not be read.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Recording is the content of a recording file.
type Recording struct {
	Exchanges []Exchange
	Problems  []LineError // unreadable lines, skipped
}

// DefaultFile is where the recording for a session lives: next to the
// session, "run.jsonl" → "run.proxy.jsonl".
func DefaultFile(sessionPath string) string {
	return strings.TrimSuffix(sessionPath, ".jsonl") + ".proxy.jsonl"
}

// Load reads a recording. A missing file is an error satisfying
// errors.Is(err, os.ErrNotExist). Corrupt or truncated lines are skipped and
// listed in Problems with their line numbers; a file that is not a recording
// at all is an error.
func Load(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(path, f)
}

func read(name string, r io.Reader) (*Recording, error) {
	rec := &Recording{}
	br := bufio.NewReader(r)
	line := 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			b = bytes.TrimSpace(b)
			if len(b) == 0 {
				// blank line: nothing to read
			} else if line == 1 {
				var h fileHeader
				if e := json.Unmarshal(b, &h); e != nil || h.Format != FileFormat {
					return nil, fmt.Errorf("%s:1: not a perflab proxy recording (want a first line with \"format\":%q)", name, FileFormat)
				}
				if h.Version > FileVersion {
					return nil, fmt.Errorf("%s:1: recording version %d is newer than this perflab reads (%d)", name, h.Version, FileVersion)
				}
			} else {
				var x Exchange
				dec := json.NewDecoder(bytes.NewReader(b))
				dec.DisallowUnknownFields()
				if e := dec.Decode(&x); e != nil {
					rec.Problems = append(rec.Problems, LineError{name, line, e})
				} else if x.Method == "" || x.URL == "" {
					rec.Problems = append(rec.Problems, LineError{name, line, errors.New("exchange without method or url")})
				} else {
					rec.Exchanges = append(rec.Exchanges, x)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return rec, fmt.Errorf("%s: %w", name, err)
		}
	}
	if line == 0 {
		return nil, fmt.Errorf("%s: empty file, not a perflab proxy recording", name)
	}
	return rec, nil
}

// FileMode is a recording's mode: it holds what the build sent and
// received (HTTPS decrypted), so only its owner may read it.
const FileMode = 0o600

// Redacted replaces the values of redacted headers in a recording.
const Redacted = "[redacted by perflab]"

// DefaultRedactHeaders are the headers whose values a recording never
// keeps unless told to (Config.KeepSecrets): credentials and session
// cookies, in requests and responses.
var DefaultRedactHeaders = []string{"Authorization", "Cookie", "Set-Cookie", "Proxy-Authorization"}

// redact replaces the values of the named headers (canonical names) in h.
func redact(h http.Header, names map[string]bool) {
	for k, v := range h {
		if names[http.CanonicalHeaderKey(k)] {
			for i := range v {
				v[i] = Redacted
			}
		}
	}
}

// writer appends exchanges to a recording file.
type writer struct {
	f *os.File
	w *bufio.Writer
}

// openWriter opens path for appending, writing the header line when the file
// is new or empty.
func openWriter(path string) (*writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, FileMode)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 { // an earlier perflab's recording
		if err := f.Chmod(perm & FileMode); err != nil {
			f.Close()
			return nil, fmt.Errorf("making %s private: %w", path, err)
		}
	}
	w := &writer{f: f, w: bufio.NewWriter(f)}
	if st.Size() == 0 {
		h, _ := json.Marshal(fileHeader{Format: FileFormat, Version: FileVersion})
		w.w.Write(append(h, '\n'))
	}
	return w, nil
}

func (w *writer) write(x *Exchange) error {
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	_, err = w.w.Write(append(b, '\n'))
	return err
}

// sync flushes buffered exchanges and syncs the file to disk.
func (w *writer) sync() error {
	if err := w.w.Flush(); err != nil {
		return err
	}
	return w.f.Sync()
}

func (w *writer) close() error {
	err := w.sync()
	if e := w.f.Close(); err == nil {
		err = e
	}
	return err
}

// captureTransport forwards a request and, in record mode, stores the
// exchange with its timing.
type captureTransport Proxy

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := (*Proxy)(t)
	rc := req.Context().Value(ctxKey{}).(*reqCtx)
	start := time.Now()
	resp, err := p.cfg.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if !rc.store {
		p.count(func(s *TrialStats) { s.Forwarded++ })
		return resp, nil
	}
	ttfb := time.Since(start)
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading response body: %w", err)
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("response body over %d MiB, too large to record", MaxBody>>20)
	}
	total := time.Since(start)
	hdr := resp.Header.Clone()
	x := &Exchange{
		Build: rc.build, Trial: rc.trial, Seq: rc.seq,
		Method: req.Method, URL: rc.url.String(), ReqHeader: rc.header,
		BodySHA256: rc.sha, BodyLen: int64(len(rc.body)),
		Status: resp.StatusCode, Header: hdr, Body: body,
		TTFBMs: msf(ttfb), TotalMs: msf(total),
	}
	x.ReqHeader.Del("Proxy-Authorization")
	if p.redact != nil {
		redact(x.ReqHeader, p.redact)
		redact(x.Header, p.redact)
	}
	if err := p.store(x); err != nil {
		p.count(func(s *TrialStats) {
			s.Failed++
			s.addError(fmt.Sprintf("%s %s: writing recording: %v", req.Method, rc.url, err))
		})
	} else {
		p.count(func(s *TrialStats) { s.Recorded++ })
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Transfer-Encoding")
	resp.TransferEncoding = nil
	return resp, nil
}

// store appends x to the recording file and to the replay index.
func (p *Proxy) store(x *Exchange) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		w, err := openWriter(p.cfg.File)
		if err != nil {
			return err
		}
		p.w = w
	}
	if err := p.w.write(x); err != nil {
		return err
	}
	p.add(x)
	return nil
}
