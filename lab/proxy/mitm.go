package proxy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// authority is the proxy's own certificate authority. HTTPS requests are
// decrypted with leaf certificates it signs, so they can be recorded and
// replayed like plain HTTP; clients must trust its certificate (Env points
// the usual variables at it). It is generated at Start and lives as long
// as the proxy.
type authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	file    string // PEM of the CA certificate, for clients

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "perflab record/replay proxy CA", Organization: []string{"perflab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	a := &authority{cert: cert, key: key, leaves: map[string]*tls.Certificate{},
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	f, err := os.CreateTemp("", "perflab-proxy-ca-*.pem")
	if err != nil {
		return nil, err
	}
	_, err = f.Write(a.certPEM)
	if e := f.Close(); err == nil {
		err = e
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	a.file = f.Name()
	return a, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

// leaf returns a certificate for host (a DNS name or an IP), signed by the
// authority, cached per host.
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.leaves[host]; ok {
		return c, nil
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host, Organization: []string{"perflab proxy"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.key.PublicKey, a.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.key}
	a.leaves[host] = c
	return c, nil
}

func (a *authority) close() {
	if a != nil && a.file != "" {
		os.Remove(a.file)
	}
}

// CACertPEM is the PEM certificate clients must trust for HTTPS through
// the proxy; nil when HTTPS is tunnelled instead.
func (p *Proxy) CACertPEM() []byte {
	if p.ca == nil {
		return nil
	}
	return p.ca.certPEM
}

// CAFile is a file holding CACertPEM, removed by Close; "" when HTTPS is
// tunnelled.
func (p *Proxy) CAFile() string {
	if p.ca == nil {
		return ""
	}
	return p.ca.file
}

// intercept answers a CONNECT as the origin would: it completes the TLS
// handshake with a certificate for the requested host and serves the
// requests inside through ServeHTTP as https:// URLs, so they are recorded
// or replayed like any other.
func (p *Proxy) intercept(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "perflab proxy: cannot intercept on this connection", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		return
	}
	tlsConn := tls.Server(&bufferedConn{Conn: conn, r: buf.Reader}, &tls.Config{
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := host
			if hello.ServerName != "" {
				name = hello.ServerName
			}
			return p.ca.leaf(name)
		},
	})
	p.begin()
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	err = tlsConn.HandshakeContext(ctx)
	cancel()
	if err != nil {
		msg := fmt.Sprintf("CONNECT %s: TLS handshake with the client failed (does it trust the proxy's CA %s?): %v", r.Host, p.ca.file, err)
		p.count(func(s *TrialStats) { s.Requests++; s.Failed++; s.addError(msg) })
		p.end()
		tlsConn.Close()
		return
	}
	p.end()
	origin := r.Host
	if _, port, err := net.SplitHostPort(origin); err == nil && port == "443" {
		origin = host
	}
	ln := newOneConnListener(tlsConn)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			req.URL.Scheme = "https"
			req.URL.Host = origin
			p.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), innerKey{}, true)))
		}),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				ln.Close()
			}
		},
	}
	srv.Serve(ln)
}

// bufferedConn reads first what the HTTP server had already buffered.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConnListener hands out one connection, then blocks until closed.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	closed chan struct{}
	mu     sync.Mutex
	given  bool
}

func newOneConnListener(c net.Conn) *oneConnListener {
	return &oneConnListener{conn: c, closed: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.given {
		l.given = true
		l.mu.Unlock()
		return l.conn, nil
	}
	l.mu.Unlock()
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

// HTTPSMode describes how the proxy treats HTTPS.
func (p *Proxy) HTTPSMode() string {
	if p.ca != nil {
		return fmt.Sprintf("intercepted (trust %s)", p.ca.file)
	}
	return "tunnelled, not recorded"
}
