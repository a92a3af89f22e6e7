package simdevice_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab/simdevice"
)

// run executes command lines in order on one fresh simulated phone and
// checks each one's exit status and output, the way adb shell would see
// them.
func TestShellAnswersLikeAndroid(t *testing.T) {
	type step struct {
		cmd        string
		code       int
		stdout     string // exact, unless "~" prefix: substring
		stderrPart string
	}
	gov := "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
	cases := []struct {
		name  string
		root  bool
		steps []step
	}{
		{"echo, quoting, variables, status", false, []step{
			{`echo "a  b" 'c $HOME' d\ e`, 0, "a  b c $HOME d e\n", ""},
			{`X=1; echo "$X${X}2"; false; echo $?`, 0, "112\n1\n", ""},
			{`echo -n hi; echo`, 0, "hi\n", ""},
			{`true && echo yes || echo no; false && echo yes || echo no`, 0, "yes\nno\n", ""},
			{`echo out; echo err >&2`, 0, "out\n", "err"},
			{`echo hi 2>/dev/null | cat`, 0, "hi\n", ""},
			{`echo "unterminated`, 2, "", "unterminated"},
			{`sleep 0.01 && echo slept; sleep x`, 1, "slept\n", "invalid number"},
		}},
		{"groups, subshells and exit", false, []step{
			{`{ echo a; echo b; } > /data/local/tmp/g; cat /data/local/tmp/g`, 0, "a\nb\n", ""},
			{`X=1; ( X=2; echo $X ); echo $X`, 0, "2\n1\n", ""},
			{`{ false; } || echo recovered`, 0, "recovered\n", ""},
			{`( exit 4 ); echo $?`, 0, "4\n", ""},
			{`echo before; exit 3; echo after`, 3, "before\n", ""},
			{`{ rm -rf /data/local/tmp/none; cp -a /nope /data/local/tmp/; } || exit 1`, 1, "", "No such file"},
			{`{ echo a; `, 2, "", "missing '}'"},
			{`echo a )`, 2, "", "unexpected ')'"},
		}},
		{"not found is 127", false, []step{
			{`frobnicate`, 127, "", "/system/bin/sh: frobnicate: inaccessible or not found"},
			{`/data/local/tmp/nothing`, 127, "", "inaccessible or not found"},
			{`which su cat`, 0, "/system/xbin/su\n/system/bin/cat\n", ""},
			{`which frobnicate`, 1, "", ""},
		}},
		{"redirection into files", false, []step{
			{`echo one > /data/local/tmp/f; echo two >> /data/local/tmp/f; cat /data/local/tmp/f`, 0, "one\ntwo\n", ""},
			{`cat /data/local/tmp/missing`, 1, "", "No such file or directory"},
			{`echo x > /data/data/x`, 1, "", "Permission denied"},
			{`chmod 755 /data/local/tmp/f && ls -l /data/local/tmp/f`, 0, "~-rwxr-xr-x", ""},
		}},
		{"properties", false, []step{
			{`getprop ro.product.model`, 0, "Pixel 3\n", ""},
			{`getprop no.such.prop fallback`, 0, "fallback\n", ""},
			{`setprop ro.product.model X`, 1, "", "Failed to set property"},
			{`setprop debug.perflab 1 && getprop debug.perflab`, 0, "1\n", ""},
			{`getprop | grep -q ro.build.version.sdk && echo listed`, 0, "listed\n", ""},
		}},
		{"root needs su", false, []step{
			{`cat ` + gov, 0, "schedutil\n", ""},
			{`echo performance > ` + gov, 1, "", "Permission denied"},
			{`stop mpdecision`, 1, "", "must be root"},
			{`su -c 'echo performance > ` + gov + `' && cat ` + gov, 0, "performance\n", ""},
			{`su 0 sh -c 'echo nonsense > ` + gov + `'`, 1, "", "write error"},
			{`su 0 id -u; id -u`, 0, "0\n2000\n", ""},
			{`su -c stop mpdecision && getprop init.svc.mpdecision`, 0, "stopped\n", ""},
			{`su -c 'mount -t tmpfs tmpfs /data/data/org.perflab.sim.feed' && mount | grep tmpfs`, 0, "~tmpfs on /data/data/org.perflab.sim.feed type tmpfs", ""},
			{`su -c 'mount -t tmpfs perflab.7.8.host /data/data/org.perflab.sim.notes' && mount | grep notes`, 0, "perflab.7.8.host on /data/data/org.perflab.sim.notes type tmpfs (rw,seclabel,relatime)\n", ""},
			{`su -c 'sync; echo 3 > /proc/sys/vm/drop_caches' && cat /proc/sys/vm/drop_caches`, 0, "3\n", ""},
			{`stat -c %u:%g /data/data/org.perflab.sim.feed`, 0, "10123:10123\n", ""},
			{`chown 10123:10123 /data/data/org.perflab.sim.feed`, 1, "", "Operation not permitted"},
			{`su -c 'chown 10123:10123 /data/data/org.perflab.sim.feed && restorecon -R /data/data/org.perflab.sim.feed'`, 0, "", ""},
			{`su -c 'restorecon /nope'`, 1, "", "No such file"},
		}},
		{"apps", true, []step{
			{`pm path org.perflab.sim.feed`, 0, "package:/data/app/org.perflab.sim.feed-1/base.apk\n", ""},
			{`pm path com.example.nothing`, 1, "", ""},
			{`am start -W -n org.perflab.sim.feed/.MainActivity`, 0, "~TotalTime: ", ""},
			{`am start -W -n org.perflab.sim.feed/.Nope`, 1, "~Starting: Intent", "does not exist"},
			{`pidof org.perflab.sim.feed >/dev/null && echo up; am force-stop org.perflab.sim.feed; pidof org.perflab.sim.feed || echo down`, 0, "up\ndown\n", ""},
			{`cp -a /data/data/org.perflab.sim.feed /data/local/tmp/ && ls /data/local/tmp/org.perflab.sim.feed`, 0, "~databases", ""},
			{`rm -rf /data/data/org.perflab.sim.feed; ls /data/data/org.perflab.sim.feed`, 1, "", "No such file"},
			{`cp -a /data/local/tmp/org.perflab.sim.feed /data/data/ && ls /data/data/org.perflab.sim.feed`, 0, "~databases", ""},
			{`pm clear org.perflab.sim.feed && ls /data/data/org.perflab.sim.feed`, 0, "Success\n", ""},
			{`input keyevent KEYCODE_BACK && dumpsys window | grep -c mCurrentFocus`, 0, "1\n", ""},
			{`am broadcast -a android.intent.action.CLOSE_SYSTEM_DIALOGS`, 0, "~Broadcast completed: result=0", ""},
		}},
		{"settings and the HTTP helper", false, []step{
			{`settings get global http_proxy`, 0, "null\n", ""},
			{`settings put global http_proxy 127.0.0.1:8080 && settings get global http_proxy`, 0, "127.0.0.1:8080\n", ""},
			{`settings list global`, 0, "http_proxy=127.0.0.1:8080\n", ""},
			{`settings get secure http_proxy`, 0, "null\n", ""},
			{`perflab-http-get http://example.test/`, 1, "", "connect to 127.0.0.1:8080: connection refused"},
			{`settings delete global http_proxy; settings delete global http_proxy`, 0, "Deleted 1 rows\nDeleted 0 rows\n", ""},
			{`settings put global http_proxy nonsense && perflab-http-get http://example.test/`, 1, "", `global http_proxy "nonsense": want HOST:PORT`},
			{`settings put global http_proxy :0 && perflab-http-get http://127.0.0.1:9/`, 1, "", "no adb reverse"},
			{`perflab-http-get http://[::1]:9/`, 1, "", "no adb reverse"},
			{`perflab-http-get http://localhost:0/`, 1, "", "bad port"},
			{`perflab-http-get http://192.0.2.1:80/`, 1, "", "connect to 192.0.2.1:80: the simulated phone reaches only its loopback"},
			{`perflab-http-get http://example.com/`, 1, "", "connect to example.com:80: the simulated phone reaches only its loopback"},
			{`perflab-http-get http://127.0.0.1.nip.io:80/`, 1, "", "reaches only its loopback"},
			{`settings put global http_proxy 10.0.0.1:3128 && perflab-http-get http://127.0.0.1:9/`, 1, "", "connect to 10.0.0.1:3128: the simulated phone reaches only its loopback"},
			{`settings get bogus x`, 255, "", "Invalid namespace 'bogus'"},
			{`settings put global`, 255, "", "usage:"},
			{`perflab-http-get ftp://x/`, 2, "", "not an http:// or https:// URL"},
		}},
		{"clock", true, []step{
			{`date -u 030209002026.00 >/dev/null; date +%s`, 0, "1772442000\n", ""},
			{`date @1772442060 >/dev/null; date -u +%Y-%m-%dT%H:%M:%S`, 0, "2026-03-02T09:01:00\n", ""},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := simdevice.New(simdevice.Options{Preset: "pixel", Seed: 1, Root: c.root})
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range c.steps {
				var out, errb bytes.Buffer
				code := s.Shell.Run(context.Background(), st.cmd, strings.NewReader(""), &out, &errb)
				okOut := out.String() == st.stdout
				if strings.HasPrefix(st.stdout, "~") {
					okOut = strings.Contains(out.String(), st.stdout[1:])
				}
				if code != st.code || !okOut || !strings.Contains(errb.String(), st.stderrPart) {
					t.Errorf("%s\n  got  exit %d stdout %q stderr %q\n  want exit %d stdout %q stderr containing %q",
						st.cmd, code, out.String(), errb.String(), st.code, st.stdout, st.stderrPart)
				}
			}
		})
	}
}

func TestCrashDialogShowsInDumpsysUntilDismissed(t *testing.T) {
	s, err := simdevice.New(simdevice.Options{Preset: "pixel", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := func(cmd string) string {
		var out, errb bytes.Buffer
		if code := s.Shell.Run(context.Background(), cmd, strings.NewReader(""), &out, &errb); code != 0 && code != 1 {
			t.Fatalf("%s: exit %d %s", cmd, code, errb.String())
		}
		return out.String()
	}
	crashed := false
	for i := 0; i < 300 && !crashed; i++ {
		run("am start -W -n org.perflab.sim.notes/.MainActivity")
		crashed = strings.Contains(run("dumpsys window windows | grep mCurrentFocus"), "Application Error: org.perflab.sim.notes")
	}
	if !crashed {
		t.Fatal("no crash dialog in 300 launches (the app crashes about 4% of the time)")
	}
	run("input keyevent KEYCODE_BACK")
	if got := run("dumpsys window windows | grep mCurrentFocus"); strings.Contains(got, "Application Error") {
		t.Errorf("dialog still focused after BACK: %q", got)
	}
}

func TestCheckListen(t *testing.T) {
	for _, c := range []struct {
		addr    string
		exposed bool
	}{
		{"127.0.0.1:6520", false},
		{"127.5.6.7:6520", false},
		{"[::1]:6520", false},
		{"localhost:6520", false},
		{"LOCALHOST:0", false},
		{":6520", true},
		{"0.0.0.0:6520", true},
		{"[::]:6520", true},
		{"192.168.1.5:6520", true},
		{"myhost:6520", true},
	} {
		err := simdevice.CheckListen(c.addr)
		if got := errors.Is(err, simdevice.ErrExposed); got != c.exposed {
			t.Errorf("CheckListen(%q) = %v, want exposed=%t", c.addr, err, c.exposed)
		}
	}
	if err := simdevice.CheckListen("6520"); err == nil || errors.Is(err, simdevice.ErrExposed) {
		t.Errorf("CheckListen(\"6520\") = %v, want a parse error", err)
	}
}
