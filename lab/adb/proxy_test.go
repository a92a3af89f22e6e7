package adb_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/adb/adbtest"
	"github.com/perflab/perflab/lab/simdevice"
)

// proxyExperiment is a two-build sim experiment with the proxy in mode,
// recording to file.
func proxyExperiment(mode, file string) *lab.Experiment {
	return &lab.Experiment{
		Device: "adb:x",
		Builds: map[string]lab.Build{
			lab.ArmControl:   {Name: "A", App: "feed"},
			lab.ArmTreatment: {Name: "B", App: "feed", EffectPct: 5},
		},
		Trials: 3, Order: "random", Seed: 3,
		Controls: lab.Controls{KillApp: true, Proxy: mode},
		Proxy:    &lab.ProxyOptions{File: file, Timing: "none"},
		Metrics:  []string{adb.MetricTotalTime},
	}
}

// proxyRig starts an adb server, a simulated phone connected to it and an
// origin HTTP server answering "feed PATH #N" for its N-th request.
func proxyRig(t *testing.T, seed int64) (*adbtest.Server, *adbtest.Sim, *httptest.Server, *atomic.Int32) {
	t.Parallel()
	srv := adbtest.StartServer(t)
	sim := adbtest.StartSim(t, "", simdevice.Options{Preset: "pixel", Seed: seed})
	adbtest.Connect(t, srv, sim.Addr, "device")
	hits := new(atomic.Int32)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		fmt.Fprintf(w, "feed %s #%d", r.URL.Path, n)
	}))
	t.Cleanup(origin.Close)
	return srv, sim, origin, hits
}

// TestProxyRecordReplayThroughThePhone drives the phone's own HTTP traffic
// (the simulated app fetching a URL on every launch, through the phone's
// http_proxy setting and adb reverse) through a real adb server: recorded
// from a real local HTTP server, replayed with that server shut down, an
// unmatched request failing its trial, the proxy toggled off and on
// between rounds, and the phone's own setting back after Close.
func TestProxyRecordReplayThroughThePhone(t *testing.T) {
	srv, sim, origin, hits := proxyRig(t, 5)
	c := ctx(t)

	sh := func(cmd string) string {
		t.Helper()
		out, err := srv.Run(c, sim.Addr, cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return strings.TrimSpace(out)
	}
	// The phone's own proxy (say, a debugging proxy of the user's),
	// which perflab must give back.
	const own = "127.0.0.1:3128"
	sh("settings put global http_proxy " + own)
	sh("settings put global " + simdevice.FetchURLSetting + " " + origin.URL + "/feed")

	_, dev := openSimPhone(t, c, sim.Addr, srv.Addr)
	if !dev.Info().Has(lab.CapProxy) {
		t.Fatalf("caps %v lack proxy", dev.Info().Caps)
	}
	file := filepath.Join(t.TempDir(), "run.proxy.jsonl")
	exp := proxyExperiment("record", file)
	evs, err := dev.Setup(c, exp)
	if err != nil {
		t.Fatal(err)
	}
	var detail map[string]string
	for _, e := range evs {
		if e.Type == lab.EventSettings && e.Settings.Detail["proxy"] != "" {
			detail = e.Settings.Detail
		}
	}
	if detail == nil || detail["proxy_phone_before"] != own || detail["proxy_file"] != file {
		t.Fatalf("settings events lack the proxy detail: %+v", evs)
	}
	port := strings.TrimPrefix(detail["proxy"], "http://127.0.0.1:")
	if got := sh("settings get global http_proxy"); got != "127.0.0.1:"+port {
		t.Errorf("phone http_proxy during the run = %q, want 127.0.0.1:%s", got, port)
	}
	reverses := func() []string {
		t.Helper()
		rs, err := srv.ReverseList(c, sim.Addr)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	rev := "tcp:" + port + " tcp:" + port
	if rs := reverses(); !slices.Contains(rs, rev) {
		t.Errorf("reverses %v lack %s", rs, rev)
	}

	trial := func(i int, build, mode string) lab.TrialResult {
		t.Helper()
		ctl := exp.Controls
		ctl.Proxy = mode
		return dev.RunTrial(c, lab.TrialRequest{Index: i, BuildKey: build, Controls: ctl, Metrics: exp.Metrics})
	}
	// Record: the app's request reaches the origin through the phone's proxy.
	for i, b := range []string{lab.ArmControl, lab.ArmTreatment} {
		if r := trial(i, b, "record"); r.Status != lab.StatusOK {
			t.Fatalf("record trial %d: %s %s", i, r.Status, r.Reason)
		}
	}
	if n := hits.Load(); n != 2 {
		t.Fatalf("origin saw %d requests while recording two trials, want 2", n)
	}
	rec, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(rec), "/feed") {
		t.Fatalf("recording %s: %v\n%s", file, err, rec)
	}
	// Another local client (this test, not the adb server relaying the
	// phone) is refused with 407, and nothing of its is recorded.
	if detail["proxy_access"] != "connections through adb reverse only; others get 407" {
		t.Errorf("proxy_access %q", detail["proxy_access"])
	}
	other := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "127.0.0.1:" + port})}}
	if r, err := other.Get(origin.URL + "/feed/other"); err != nil || r.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("a local client outside adb reverse: %v %v, want 407", r, err)
	} else {
		r.Body.Close()
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("origin saw %d requests, want the phone's 2 only", n)
	}
	if rec2, _ := os.ReadFile(file); strings.Contains(string(rec2), "/feed/other") {
		t.Errorf("the refused request was recorded:\n%s", rec2)
	}

	// Replay with the origin gone: served from the recording.
	origin.Close()
	for i, b := range []string{lab.ArmControl, lab.ArmTreatment, lab.ArmControl} {
		if r := trial(2+i, b, "replay"); r.Status != lab.StatusOK {
			t.Errorf("replay trial %d (%s) with the origin shut down: %s %s", 2+i, b, r.Status, r.Reason)
		}
	}
	if got := sh("perflab-http-get " + origin.URL + "/feed"); !strings.HasPrefix(got, "feed /feed #") {
		t.Errorf("phone got %q from the replaying proxy, want the recorded body", got)
	}

	// A request the recording cannot answer fails its trial.
	sh("settings put global " + simdevice.FetchURLSetting + " " + origin.URL + "/other")
	r := trial(5, lab.ArmControl, "replay")
	if r.Status != lab.StatusFailed || !strings.Contains(r.Reason, "/other") {
		t.Errorf("unmatched request: trial %s %q, want failed naming /other", r.Status, r.Reason)
	}

	// Toggled off between rounds: the phone gets its own proxy back.
	sh("settings delete global " + simdevice.FetchURLSetting)
	if r := trial(6, lab.ArmControl, "off"); r.Status != lab.StatusOK {
		t.Errorf("trial with the proxy off: %s %s", r.Status, r.Reason)
	}
	if got := sh("settings get global http_proxy"); got != own {
		t.Errorf("proxy off: phone http_proxy %q, want its own %q", got, own)
	}
	if rs := reverses(); slices.Contains(rs, rev) {
		t.Errorf("proxy off: reverse %s still set: %v", rev, rs)
	}
	// ... and on again.
	sh("settings put global " + simdevice.FetchURLSetting + " " + origin.URL + "/feed")
	if r := trial(7, lab.ArmTreatment, "replay"); r.Status != lab.StatusOK {
		t.Errorf("replay after toggling the proxy back on: %s %s", r.Status, r.Reason)
	}
	if got := sh("settings get global http_proxy"); got != "127.0.0.1:"+port {
		t.Errorf("proxy back on: phone http_proxy %q", got)
	}

	if err := dev.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := sh("settings get global http_proxy"); got != own {
		t.Errorf("after Close: phone http_proxy %q, want its own %q", got, own)
	}
	if rs := reverses(); slices.Contains(rs, rev) {
		t.Errorf("after Close: reverse %s still set: %v", rev, rs)
	}
}

// TestProxyWholeRunRecordsThenReplays runs a whole experiment in replay
// mode through the runner: each build gets its recording pass (the only
// requests the origin sees), every measured trial is replayed, and a
// phone that had no proxy has none afterwards.
func TestProxyWholeRunRecordsThenReplays(t *testing.T) {
	srv, sim, origin, hits := proxyRig(t, 6)
	c := ctx(t)
	if _, err := srv.Run(c, sim.Addr, "settings put global "+simdevice.FetchURLSetting+" "+origin.URL+"/feed"); err != nil {
		t.Fatal(err)
	}
	_, dev := openSimPhone(t, c, sim.Addr, srv.Addr)
	exp := proxyExperiment("replay", filepath.Join(t.TempDir(), "run.proxy.jsonl"))
	ok := 0
	for _, e := range drain(lab.NewRunner(dev, exp).Run(c), nil) {
		switch {
		case e.Type == lab.EventTrial && e.Trial.Status == lab.StatusOK:
			ok++
		case e.Type == lab.EventTrial:
			t.Errorf("trial %d: %s %s", e.Trial.Index, e.Trial.Status, e.Trial.Reason)
		case e.Type == lab.EventEnd && e.End.Reason != "completed":
			t.Errorf("end %+v", e.End)
		}
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if ok != 6 {
		t.Errorf("%d ok trials, want 6", ok)
	}
	if n := hits.Load(); n != 2 {
		t.Errorf("origin saw %d requests, want 2 (one recording pass per build, then replay)", n)
	}
	out, err := srv.Run(c, sim.Addr, "settings get global http_proxy")
	if err != nil || strings.TrimSpace(out) != "null" {
		t.Errorf("after Close: http_proxy %q (%v), want null as before", out, err)
	}
}

// TestProxyLeftoverFromADeadRunIsRepaired: a run that died with the phone
// pointing at its proxy must not make the next run take that dead proxy
// for the phone's own setting.
func TestProxyLeftoverFromADeadRunIsRepaired(t *testing.T) {
	srv, sim, _, _ := proxyRig(t, 7)
	c := ctx(t)
	get := func() string {
		t.Helper()
		out, err := srv.Run(c, sim.Addr, "settings get global http_proxy")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	for _, own := range []string{"null", "127.0.0.1:3128"} {
		if own != "null" {
			if _, err := srv.Run(c, sim.Addr, "settings put global http_proxy "+own); err != nil {
				t.Fatal(err)
			}
		}
		deadRaw, dead := openSimPhone(t, c, sim.Addr, srv.Addr)
		if _, err := dead.Setup(c, proxyExperiment("record", filepath.Join(t.TempDir(), "a.jsonl"))); err != nil {
			t.Fatal(err)
		}
		stale := get()
		if stale == own {
			t.Fatalf("setup left http_proxy at %q", stale)
		}
		// dead is never closed (the process died: its phone lock goes
		// with it), so the next run finds the phone pointing at a dead
		// proxy.
		adb.DropLock(deadRaw)
		_, next := openSimPhone(t, c, sim.Addr, srv.Addr)
		evs, err := next.Setup(c, proxyExperiment("record", filepath.Join(t.TempDir(), "b.jsonl")))
		if err != nil {
			t.Fatal(err)
		}
		repaired := false
		for _, e := range evs {
			if e.Type == lab.EventSettings && e.Settings.Detail["proxy_phone_repaired"] != "" && e.Settings.Detail["proxy_phone_before"] == own {
				repaired = true
			}
		}
		if !repaired {
			t.Errorf("own %s: no settings event saying the leftover was repaired: %+v", own, evs)
		}
		if err := next.Close(); err != nil {
			t.Fatal(err)
		}
		if got := get(); got != own {
			t.Errorf("after the next run: http_proxy %q, want the phone's own %q (not the dead run's %q)", got, own, stale)
		}
		// Release the dead run's proxy listener and reverse.
		dead.Close()
		if got := get(); got != own {
			t.Errorf("after closing the dead run late: http_proxy %q, want %q", got, own)
		}
	}
}
