package proxy

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Replay: a recorded response for each request, matched by its key, and
// a hint of why none matched.

// replay serves a recorded response or reports the request as unmatched.
func (p *Proxy) replay(w http.ResponseWriter, r *http.Request, rc *reqCtx) {
	k := p.m.key(r.Method, rc.url.String(), rc.header, rc.sha)
	p.mu.Lock()
	cands := p.index[k]
	var x *Exchange
	if len(cands) > 0 {
		same := cands[:0:0]
		for _, c := range cands {
			if c.Build == rc.build {
				same = append(same, c)
			}
		}
		if len(same) > 0 {
			cands = same
		}
		n := p.trial.occ[k]
		p.trial.occ[k] = n + 1
		x = cands[n%len(cands)]
	}
	var hint string
	if x == nil {
		hint = p.hint(k)
	}
	p.mu.Unlock()

	if x == nil {
		msg := fmt.Sprintf("%s %s: no recording matches%s", r.Method, rc.url, hint)
		p.count(func(s *TrialStats) { s.Unmatched++; s.addError(msg) })
		http.Error(w, "perflab proxy (replay): "+msg, http.StatusBadGateway)
		return
	}
	p.count(func(s *TrialStats) { s.Replayed++ })
	if p.cfg.Timing == TimingRecorded {
		if p.timer(r.Context(), ms(x.TTFBMs)) != nil {
			return
		}
	}
	h := w.Header()
	for k, v := range x.Header {
		h[k] = append([]string(nil), v...)
	}
	for _, k := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Trailer"} {
		h.Del(k)
	}
	h.Set("Content-Length", fmt.Sprint(len(x.Body)))
	w.WriteHeader(x.Status)
	if p.cfg.Timing == TimingRecorded && x.TotalMs > x.TTFBMs {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if p.timer(r.Context(), ms(x.TotalMs-x.TTFBMs)) != nil {
			return
		}
	}
	if r.Method != http.MethodHead {
		w.Write(x.Body)
	}
}

// hint explains why a request matched nothing, comparing it with recordings
// of the same method and URL. p.mu must be held.
func (p *Proxy) hint(k reqKey) string {
	same := p.byURL[k.method+" "+k.url]
	if len(same) == 0 {
		if p.n == 0 {
			return " (the recording is empty)"
		}
		return fmt.Sprintf(" (%d exchanges recorded, none for this method and URL)", p.n)
	}
	// Explain against the closest recording of this URL.
	var diffs []string
	bestScore := -1
	for _, x := range same {
		var d []string
		score := 0
		if x.BodySHA256 != k.body {
			d = append(d, "request body differs")
			score++
		}
		if hk := p.m.headerKey(x.ReqHeader); hk != k.headers {
			names := diffHeaders(hk, k.headers)
			d = append(d, "headers differ: "+strings.Join(names, ", ")+" (ignore volatile ones with proxy.ignore_headers)")
			score += len(names)
		}
		if bestScore < 0 || score < bestScore {
			diffs, bestScore = d, score
		}
	}
	return fmt.Sprintf(" (%d recording(s) of this URL; %s)", len(same), strings.Join(diffs, "; "))
}

// diffHeaders names the headers whose lines differ between two header keys.
func diffHeaders(a, b string) []string {
	parse := func(s string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(s, "\n") {
			if n, v, ok := strings.Cut(l, ":"); ok {
				m[n] = v
			}
		}
		return m
	}
	ma, mb := parse(a), parse(b)
	set := map[string]bool{}
	for n, v := range ma {
		if mb[n] != v {
			set[n] = true
		}
	}
	for n, v := range mb {
		if ma[n] != v {
			set[n] = true
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
