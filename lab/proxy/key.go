package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// defaultIgnoreHeaders are request headers never used for matching: hop-by-hop
// headers, headers the body hash already covers, and common per-request
// volatile values (dates, trace and request ids).
var defaultIgnoreHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length",
	"Date", "X-Request-Id", "X-Request-Start", "X-Correlation-Id", "Traceparent", "Tracestate",
	"X-B3-Traceid", "X-B3-Spanid", "X-B3-Parentspanid", "X-B3-Sampled", "X-Amzn-Trace-Id",
	"If-Modified-Since", "If-None-Match",
}

// matcher turns a request into its match key under a configuration.
type matcher struct {
	allHeaders  bool            // ignore every header
	ignoreHdr   map[string]bool // canonical header names
	ignoreQuery map[string]bool // exact parameter names
	ignoreGlob  []string        // parameter name prefixes from "name*"
}

func newMatcher(ignoreHeaders, ignoreQuery []string) *matcher {
	m := &matcher{ignoreHdr: map[string]bool{}, ignoreQuery: map[string]bool{}}
	for _, h := range defaultIgnoreHeaders {
		m.ignoreHdr[http.CanonicalHeaderKey(h)] = true
	}
	for _, h := range ignoreHeaders {
		if h == "*" {
			m.allHeaders = true
		}
		m.ignoreHdr[http.CanonicalHeaderKey(h)] = true
	}
	for _, q := range ignoreQuery {
		if p, ok := strings.CutSuffix(q, "*"); ok {
			m.ignoreGlob = append(m.ignoreGlob, p)
		} else {
			m.ignoreQuery[q] = true
		}
	}
	return m
}

func (m *matcher) skipParam(name string) bool {
	if m.ignoreQuery[name] {
		return true
	}
	for _, p := range m.ignoreGlob {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// normURL is the URL as matched: lower-case scheme and host, default port
// dropped, fragment dropped, ignored query parameters removed and the rest
// sorted by name (values keep their order).
func (m *matcher) normURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	if h, p, err := net.SplitHostPort(host); err == nil {
		if (scheme == "http" && p == "80") || (scheme == "https" && p == "443") {
			host = h
			if strings.Contains(h, ":") {
				host = "[" + h + "]"
			}
		}
	}
	q := u.Query()
	var names []string
	for k := range q {
		if !m.skipParam(k) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k))
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(v))
		}
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	s := scheme + "://" + host + path
	if b.Len() > 0 {
		s += "?" + b.String()
	}
	return s
}

// headerKey is the canonical text of the headers that take part in a match.
func (m *matcher) headerKey(h http.Header) string {
	if m.allHeaders {
		return ""
	}
	var names []string
	for k := range h {
		ck := http.CanonicalHeaderKey(k)
		if !m.ignoreHdr[ck] {
			names = append(names, ck)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(strings.Join(h.Values(k), ","))
		b.WriteByte('\n')
	}
	return b.String()
}

// reqKey identifies a request: method, normalised URL, the headers that
// count, and the body hash.
type reqKey struct {
	method, url, headers, body string
}

func (m *matcher) key(method, rawURL string, h http.Header, bodySHA string) reqKey {
	return reqKey{strings.ToUpper(method), m.normURL(rawURL), m.headerKey(h), bodySHA}
}

func bodyHash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
