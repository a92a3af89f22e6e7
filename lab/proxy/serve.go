package proxy

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Serving: each request (or CONNECT tunnel) authorized, then replayed or
// sent upstream and recorded.

type ctxKey struct{}

// reqCtx travels with a forwarded request to the capturing transport.
type reqCtx struct {
	url    *url.URL
	store  bool
	header http.Header
	body   []byte
	sha    string
	build  string
	trial  int
	seq    int
}

// ServeHTTP handles one proxied request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Context().Value(innerKey{}) == nil && !p.authorized(r) {
		p.count(func(s *TrialStats) { s.Refused++ })
		w.Header().Set("Proxy-Authenticate", `Basic realm="perflab"`)
		http.Error(w, "perflab proxy: proxy credentials required (only the build under test may use this proxy)", http.StatusProxyAuthRequired)
		return
	}
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	p.begin()
	defer p.end()
	target, err := p.targetURL(r)
	if err != nil {
		http.Error(w, "perflab proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		p.count(func(s *TrialStats) {
			s.Requests++
			s.Failed++
			s.addError(fmt.Sprintf("%s %s: reading request body: %v", r.Method, target, err))
		})
		http.Error(w, "perflab proxy: reading request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > MaxBody {
		p.count(func(s *TrialStats) {
			s.Requests++
			s.Failed++
			s.addError(fmt.Sprintf("%s %s: request body over %d MiB", r.Method, target, MaxBody>>20))
		})
		http.Error(w, "perflab proxy: request body too large to record", http.StatusRequestEntityTooLarge)
		return
	}
	sha := bodyHash(body)

	p.mu.Lock()
	mode := p.mode
	rc := &reqCtx{url: target, store: mode == ModeRecord, header: r.Header.Clone(), body: body, sha: sha,
		build: p.trial.build, trial: p.trial.index, seq: p.trial.seq}
	p.trial.seq++
	p.trial.stats.Requests++
	p.total.Requests++
	p.mu.Unlock()

	if mode == ModeReplay {
		p.replay(w, r, rc)
		return
	}
	r2 := r.WithContext(context.WithValue(r.Context(), ctxKey{}, rc))
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	p.rp.ServeHTTP(w, r2)
}

// innerKey marks a request read inside an intercepted CONNECT, which was
// authorized as a whole.
type innerKey struct{}

// authorized reports whether r carries the run's proxy credentials (or the
// proxy requires none).
func (p *Proxy) authorized(r *http.Request) bool {
	if p.cfg.Secret == "" {
		return true
	}
	got := r.Header.Get("Proxy-Authorization")
	want := p.Authorization()
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// vettingListener refuses connections Config.AllowConn refuses.
type vettingListener struct {
	net.Listener
	p *Proxy
}

func (l *vettingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := l.p.cfg.AllowConn(c); err != nil {
			l.p.count(func(s *TrialStats) { s.Refused++ })
			c.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"+
				"perflab proxy: "+err.Error()+"\n")
			c.Close()
			continue
		}
		return c, nil
	}
}

// targetURL is the absolute URL a request is for.
func (p *Proxy) targetURL(r *http.Request) (*url.URL, error) {
	if r.URL.IsAbs() && r.URL.Host != "" {
		u := *r.URL
		return &u, nil
	}
	if p.cfg.Target == "" {
		return nil, fmt.Errorf("request for %q has no host: send absolute URLs (set HTTP_PROXY to the proxy) or configure a target origin", r.URL.RequestURI())
	}
	return url.Parse(strings.TrimSuffix(p.cfg.Target, "/") + r.URL.RequestURI())
}

// upstreamError answers a request whose forwarding failed.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	rc := r.Context().Value(ctxKey{}).(*reqCtx)
	msg := fmt.Sprintf("%s %s: upstream: %v", r.Method, rc.url, err)
	p.count(func(s *TrialStats) { s.Failed++; s.addError(msg) })
	http.Error(w, "perflab proxy: "+msg, http.StatusBadGateway)
}

// connect handles CONNECT (HTTPS through the proxy). By default the
// connection is decrypted and its requests handled like plain ones. With
// TunnelHTTPS encrypted traffic cannot be recorded: outside replay it is
// tunnelled and noted on the trial; in replay it is refused and counted as
// unmatched, because the trial would otherwise reach the real network.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	if p.ca != nil {
		p.intercept(w, r)
		return
	}
	p.mu.Lock()
	mode := p.mode
	p.trial.stats.Requests++
	p.total.Requests++
	p.mu.Unlock()
	if mode == ModeReplay {
		msg := fmt.Sprintf("CONNECT %s: HTTPS cannot be replayed (encrypted traffic is not recorded); point the app at http:// or a target origin", r.Host)
		p.count(func(s *TrialStats) { s.Unmatched++; s.addError(msg) })
		http.Error(w, "perflab proxy (replay): "+msg, http.StatusBadGateway)
		return
	}
	up, err := (&net.Dialer{Timeout: 30 * time.Second}).DialContext(r.Context(), "tcp", r.Host)
	if err != nil {
		msg := fmt.Sprintf("CONNECT %s: %v", r.Host, err)
		p.count(func(s *TrialStats) { s.Failed++; s.addError(msg) })
		http.Error(w, "perflab proxy: "+msg, http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "perflab proxy: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	p.count(func(s *TrialStats) {
		s.Forwarded++
		if mode == ModeRecord {
			s.addError(fmt.Sprintf("CONNECT %s: HTTPS tunnelled, not recorded; replay will not serve it", r.Host))
		}
	})
	conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	done := make(chan struct{}, 2)
	go func() {
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			up.Write(b)
		}
		io.Copy(up, conn)
		if c, ok := up.(*net.TCPConn); ok {
			c.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		io.Copy(conn, up)
		if c, ok := conn.(*net.TCPConn); ok {
			c.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
	conn.Close()
	up.Close()
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
