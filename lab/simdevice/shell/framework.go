package shell

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// resolveComponent turns "pkg/.Act" or "pkg/pkg.Act" into package and
// activity class as am prints them.
func resolveComponent(c string) (pkg, act string, ok bool) {
	pkg, act, ok = strings.Cut(c, "/")
	if !ok || pkg == "" || act == "" {
		return "", "", false
	}
	return pkg, act, true
}

func cmdAm(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, "usage: am [start|force-stop|kill|broadcast] ...")
		return 1
	}
	switch args[1] {
	case "start", "start-activity":
		return amStart(e, args[2:], stdout, stderr)
	case "force-stop", "kill":
		if len(args) < 3 {
			fmt.Fprintf(stderr, "Error: no package specified for %s\n", args[1])
			return 1
		}
		e.sh.Phone.ForceStop(args[len(args)-1])
		return 0
	case "broadcast":
		action := ""
		for i := 2; i < len(args)-1; i++ {
			if args[i] == "-a" {
				action = args[i+1]
			}
		}
		fmt.Fprintf(stdout, "Broadcasting: Intent { act=%s flg=0x400000 }\n", action)
		if action == "android.intent.action.CLOSE_SYSTEM_DIALOGS" {
			e.sh.Phone.DismissDialogs()
		}
		fmt.Fprintln(stdout, "Broadcast completed: result=0")
		return 0
	}
	fmt.Fprintf(stderr, "Error: unknown command '%s'\n", args[1])
	return 1
}

func amStart(e *env, args []string, stdout, stderr io.Writer) int {
	wait, stopFirst := false, false
	comp := ""
	extras := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-W":
			wait = true
		case "-S":
			stopFirst = true
		case "-n":
			if i+1 < len(args) {
				comp = args[i+1]
				i++
			}
		case "--es", "--ei", "--ef", "--el", "--ez":
			if i+2 < len(args) {
				extras[args[i+1]] = args[i+2]
				i += 2
			}
		case "-a", "-c", "-d", "-t", "--user", "-f":
			i++
		default:
			if !strings.HasPrefix(a, "-") && comp == "" && strings.Contains(a, "/") {
				comp = a
			}
		}
	}
	pkg, act, ok := resolveComponent(comp)
	if !ok {
		fmt.Fprintln(stderr, "Error: Activity not started, unable to resolve Intent { flg=0x10000000 }")
		return 1
	}
	if _, err := e.sh.Phone.PackagePath(pkg); err != nil {
		fmt.Fprintf(stdout, "Starting: Intent { cmp=%s }\n", comp)
		fmt.Fprintf(stderr, "Error type 3\nError: Activity class {%s/%s} does not exist.\n", pkg, fullActivity(pkg, act))
		return 1
	}
	if stopFirst {
		e.sh.Phone.ForceStop(pkg)
	}
	fmt.Fprintf(stdout, "Starting: Intent { cmp=%s }\n", comp)
	res, err := e.sh.Phone.Launch(e.ctx, LaunchRequest{Package: pkg, Activity: act, Extras: extras})
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	e.sh.mu.Lock()
	e.sh.focus = res.Activity
	e.sh.mu.Unlock()
	if !wait {
		return 0
	}
	fmt.Fprintf(stdout, "Status: ok\nLaunchState: %s\nActivity: %s\nTotalTime: %d\nWaitTime: %d\nComplete\n",
		res.State, res.Activity, res.TotalTime.Milliseconds(), res.WaitTime.Milliseconds())
	return 0
}

func fullActivity(pkg, act string) string {
	if strings.HasPrefix(act, ".") {
		return pkg + act
	}
	return act
}

func cmdPm(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, "usage: pm [install|path|clear|list packages|uninstall] ...")
		return 1
	}
	switch args[1] {
	case "install":
		_, ops := flags(args[2:])
		if len(ops) != 1 {
			fmt.Fprintln(stderr, "Error: must specify an APK file")
			return 1
		}
		data, err := e.readPath(ops[0])
		if err != nil {
			fmt.Fprintf(stderr, "Error: Unable to open file: %s\nConsider using a file under /data/local/tmp/\n", ops[0])
			return 1
		}
		if _, err := e.sh.Phone.InstallAPK(data); err != nil {
			fmt.Fprintf(stdout, "Failure [INSTALL_PARSE_FAILED_NOT_APK: %v]\n", err)
			return 1
		}
		fmt.Fprintln(stdout, "Success")
		return 0
	case "path":
		if len(args) < 3 {
			return 1
		}
		p, err := e.sh.Phone.PackagePath(args[2])
		if err != nil {
			return 1
		}
		fmt.Fprintf(stdout, "package:%s\n", p)
		return 0
	case "clear":
		if len(args) < 3 {
			return 1
		}
		if err := e.sh.Phone.ClearData(args[len(args)-1]); err != nil {
			fmt.Fprintln(stdout, "Failed")
			return 1
		}
		fmt.Fprintln(stdout, "Success")
		return 0
	case "uninstall":
		if len(args) < 3 {
			return 1
		}
		if err := e.sh.Phone.Uninstall(args[len(args)-1]); err != nil {
			fmt.Fprintln(stdout, "Failure [DELETE_FAILED_INTERNAL_ERROR]")
			return 1
		}
		fmt.Fprintln(stdout, "Success")
		return 0
	case "list":
		if len(args) < 3 || args[2] != "packages" {
			fmt.Fprintln(stderr, "Error: unknown list type")
			return 1
		}
		f, rest := flags(args[3:])
		for _, p := range e.sh.Phone.Packages() {
			if len(rest) > 0 && !strings.Contains(p, rest[0]) {
				continue
			}
			if f['f'] {
				apk, _ := e.sh.Phone.PackagePath(p)
				fmt.Fprintf(stdout, "package:%s=%s\n", apk, p)
			} else {
				fmt.Fprintf(stdout, "package:%s\n", p)
			}
		}
		return 0
	}
	fmt.Fprintf(stderr, "Error: unknown command '%s'\n", args[1])
	return 1
}

// Android key codes the shell understands by name or number.
var keycodes = map[string]int{
	"KEYCODE_HOME": 3, "KEYCODE_BACK": 4, "KEYCODE_DPAD_CENTER": 23, "KEYCODE_POWER": 26,
	"KEYCODE_ENTER": 66, "KEYCODE_MENU": 82, "KEYCODE_ESCAPE": 111, "KEYCODE_WAKEUP": 224, "KEYCODE_SLEEP": 223,
}

func cmdInput(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	if len(args) < 3 || args[1] != "keyevent" && args[1] != "tap" && args[1] != "swipe" && args[1] != "text" {
		fmt.Fprintln(stderr, "Usage: input [keyevent|tap|swipe|text] ...")
		return 1
	}
	if args[1] != "keyevent" {
		return 0
	}
	for _, k := range args[2:] {
		code, ok := keycodes[k]
		if !ok {
			n, err := strconv.Atoi(k)
			if err != nil {
				fmt.Fprintf(stderr, "Error: Unknown keycode: %s\n", k)
				return 1
			}
			code = n
		}
		switch code {
		case 4, 23, 66, 111:
			e.sh.Phone.DismissDialogs()
		case 3:
			e.sh.Phone.DismissDialogs()
			e.sh.mu.Lock()
			e.sh.focus = ""
			e.sh.mu.Unlock()
		}
	}
	return 0
}

func cmdDumpsys(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[1] != "window" {
		if len(args) < 2 {
			fmt.Fprintln(stdout, "Currently running services:\n  activity\n  package\n  window")
			return 0
		}
		fmt.Fprintf(stderr, "Can't find service: %s\n", args[1])
		return 0
	}
	e.sh.mu.Lock()
	focus := e.sh.focus
	e.sh.mu.Unlock()
	if focus == "" {
		focus = "com.android.launcher3/com.android.launcher3.uioverrides.QuickstepLauncher"
	}
	fmt.Fprintln(stdout, "WINDOW MANAGER WINDOWS (dumpsys window windows)")
	if ds := e.sh.Phone.Dialogs(); len(ds) > 0 {
		d := ds[len(ds)-1]
		fmt.Fprintf(stdout, "  Window #1 Window{5e1d2a u0 %s}:\n", d)
		fmt.Fprintf(stdout, "  mCurrentFocus=Window{5e1d2a u0 %s}\n", d)
	} else {
		fmt.Fprintf(stdout, "  Window #1 Window{3b7f0c u0 %s}:\n", focus)
		fmt.Fprintf(stdout, "  mCurrentFocus=Window{3b7f0c u0 %s}\n", focus)
	}
	fmt.Fprintf(stdout, "  mFocusedApp=AppWindowToken{9c2e1 token=Token{44aa %s}}\n", focus)
	return 0
}
