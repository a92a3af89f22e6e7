package shell

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Settings is the framework's settings provider behind the `settings`
// command: the system, secure and global tables, name → value.
type Settings interface {
	// Setting returns a value and whether it is set.
	Setting(namespace, key string) (string, bool)
	PutSetting(namespace, key, value string)
	// DeleteSetting removes a value and reports whether it was set.
	DeleteSetting(namespace, key string) bool
	// SettingsList returns one table.
	SettingsList(namespace string) map[string]string
}

// Network is how programs on the phone open TCP connections. Connections
// to the phone's own loopback reach only what listens there — on the
// simulated phone, ports the host has reversed with `adb reverse`.
type Network interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Settings namespaces `settings` knows.
var settingsNamespaces = map[string]bool{"system": true, "secure": true, "global": true}

const settingsUsage = `usage:  settings [--user <USER_ID> | current] get namespace key
        settings [--user <USER_ID> | current] put namespace key value
        settings [--user <USER_ID> | current] delete namespace key
        settings [--user <USER_ID> | current] list namespace

'namespace' is one of {system, secure, global}, case-insensitive
`

// cmdSettings is Android's settings command (cmd settings): get prints the
// value or "null", put stores silently, delete prints "Deleted N rows",
// list prints key=value lines.
func cmdSettings(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	st, ok := e.sh.Phone.(Settings)
	if !ok {
		fmt.Fprintln(stderr, "/system/bin/sh: settings: inaccessible or not found")
		return 127
	}
	a := args[1:]
	if len(a) >= 2 && a[0] == "--user" {
		a = a[2:]
	}
	if len(a) < 2 {
		fmt.Fprint(stderr, settingsUsage)
		return 255
	}
	verb, ns := a[0], strings.ToLower(a[1])
	if !settingsNamespaces[ns] {
		fmt.Fprintf(stderr, "Invalid namespace '%s'\n", a[1])
		fmt.Fprint(stderr, settingsUsage)
		return 255
	}
	want := map[string]int{"get": 3, "put": 4, "delete": 3, "list": 2}
	n, known := want[verb]
	if !known || len(a) < n || verb != "put" && len(a) != n {
		fmt.Fprint(stderr, settingsUsage)
		return 255
	}
	switch verb {
	case "get":
		v, set := st.Setting(ns, a[2])
		if !set {
			v = "null"
		}
		fmt.Fprintln(stdout, v)
	case "put":
		// put namespace key value [tag] [default]: the value is one word.
		st.PutSetting(ns, a[2], a[3])
	case "delete":
		n := 0
		if st.DeleteSetting(ns, a[2]) {
			n = 1
		}
		fmt.Fprintf(stdout, "Deleted %d rows\n", n)
	case "list":
		m := st.SettingsList(ns)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(stdout, "%s=%s\n", k, m[k])
		}
	}
	return 0
}

// HTTPGetCommand is the perflab-specific test helper on the simulated
// phone: a minimal HTTP client that, like an Android app, goes through the
// proxy in the global http_proxy setting.
const HTTPGetCommand = "perflab-http-get"

const httpGetUsage = `usage: perflab-http-get [-X METHOD] [-d BODY] [-H 'Name: value']... URL

Fetches URL the way an app on this phone would: through the proxy in
"settings get global http_proxy" (HOST:PORT; unset, "null" or ":0" means
none), else directly. 127.0.0.1 and localhost are the phone's own loopback,
where only ports the host reversed (adb reverse) listen; the simulated phone
reaches nothing else (any other address, proxy or not, is refused). Prints the body;
exits 1 on an HTTP status of 400 or more, naming it on stderr.
`

// cmdHTTPGet runs perflab-http-get.
func cmdHTTPGet(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	nw, ok := e.sh.Phone.(Network)
	if !ok {
		fmt.Fprintf(stderr, "/system/bin/sh: %s: inaccessible or not found\n", HTTPGetCommand)
		return 127
	}
	method, body, target := http.MethodGet, "", ""
	hdr := http.Header{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "-X" || a == "-d" || a == "-H") && i+1 < len(args):
			i++
			switch a {
			case "-X":
				method = args[i]
			case "-d":
				body = args[i]
				if method == http.MethodGet {
					method = http.MethodPost
				}
			case "-H":
				k, v, ok := strings.Cut(args[i], ":")
				if !ok {
					fmt.Fprintf(stderr, "%s: bad header %q, want 'Name: value'\n", HTTPGetCommand, args[i])
					return 2
				}
				hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		case a == "-h" || a == "--help":
			fmt.Fprint(stdout, httpGetUsage)
			return 0
		case strings.HasPrefix(a, "-") || target != "":
			fmt.Fprint(stderr, httpGetUsage)
			return 2
		default:
			target = a
		}
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		fmt.Fprintf(stderr, "%s: %q is not an http:// or https:// URL\n", HTTPGetCommand, target)
		return 2
	}
	proxyURL, err := phoneProxy(e.sh.Phone)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", HTTPGetCommand, err)
		return 1
	}
	tr := &http.Transport{
		Proxy:             func(*http.Request) (*url.URL, error) { return proxyURL, nil },
		DialContext:       nw.DialContext,
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader([]byte(body)))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", HTTPGetCommand, err)
		return 2
	}
	if body == "" {
		req.Body, req.ContentLength = nil, 0
	}
	req.Header = hdr
	req.Header.Set("User-Agent", "perflab-http-get (simulated Android)")
	resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", HTTPGetCommand, err)
		return 1
	}
	defer resp.Body.Close()
	if _, err := io.Copy(stdout, resp.Body); err != nil {
		fmt.Fprintf(stderr, "%s: reading the body: %v\n", HTTPGetCommand, err)
		return 1
	}
	if resp.StatusCode >= 400 {
		fmt.Fprintf(stderr, "%s: HTTP %s\n", HTTPGetCommand, resp.Status)
		return 1
	}
	return 0
}

// phoneProxy reads the global http_proxy setting as Android's
// ProxyTracker does: HOST:PORT, with unset, "null", "" and ":0" meaning no
// proxy.
func phoneProxy(p Phone) (*url.URL, error) {
	st, ok := p.(Settings)
	if !ok {
		return nil, nil
	}
	v, set := st.Setting("global", "http_proxy")
	v = strings.TrimSpace(v)
	if !set || v == "" || v == "null" || v == ":0" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil || host == "" || port == "" || port == "0" {
		return nil, fmt.Errorf("global http_proxy %q: want HOST:PORT", v)
	}
	return &url.URL{Scheme: "http", Host: v}, nil
}
