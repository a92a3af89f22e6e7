package tui

import (
	"encoding/json"
	"strconv"

	"github.com/perflab/perflab/lab"
)

// The controls the workbench lists: each one's key, how it reads from
// and writes to lab.Controls.

// controlDef describes one noise control: what it is called in the
// experiment file, what it does in one line, which capability it needs, and
// how to read and write it.
type controlDef struct {
	key     string // experiment-file name, also the capability name
	label   string
	explain string
	cap     string
	needs   string   // a capability without which the row is not shown at all ("": none)
	values  []string // cycle order; the first is "off"
}

// controlDefs is the order the stepper walks: the reset procedure, the proxy,
// the clock, then the device-wide settings.
var controlDefs = []controlDef{
	{key: "restore_snapshot", label: "restore snapshot", explain: "restore the app's saved state before each trial, so on-disk state cannot grow", cap: lab.CapRestoreSnapshot, values: onOff},
	{key: "kill_app", label: "kill app", explain: "force-stop the app before each trial, so every start is cold", cap: lab.CapKillApp, values: onOff},
	{key: "dismiss_dialogs", label: "dismiss dialogs", explain: "close crash and ANR dialogs left by earlier trials", cap: lab.CapDismissDialogs, values: onOff},
	{key: "drop_caches", label: "drop caches", explain: "drop the page cache before each trial, so file reads start cold", cap: lab.CapDropCaches, values: onOff},
	{key: "proxy", label: "proxy", explain: "record network responses once, then replay them: latency cannot drift", cap: lab.CapProxy, values: []string{"off", "record", "replay"}},
	{key: "clock_reset", label: "clock reset", explain: "reset the device clock before each trial, so time-dependent paths repeat", cap: lab.CapClockReset, values: onOff},
	{key: "governor", label: "governor profile", explain: "lock CPU/GPU frequencies to a profile that does not throttle", cap: lab.CapGovernor, values: onOff},
	{key: "tmpfs", label: "tmpfs app data", explain: "keep app data in RAM, removing disk-write jitter", cap: lab.CapTmpfs, values: onOff},
	{key: "aslr", label: "ASLR off", explain: "run with address-space randomization off (setarch -R)", cap: lab.CapASLR, needs: lab.CapCommandBuilds, values: onOff},
	{key: "pin_cpu", label: "pin CPU", explain: "pin the benchmark to one CPU (taskset)", cap: lab.CapPinCPU, needs: lab.CapCommandBuilds, values: []string{"off", "0", "1", "2", "3"}},
	{key: "cachegrind", label: "cachegrind metric", explain: "add a deterministic instruction-cost metric (valgrind, slow)", needs: lab.CapCommandBuilds, values: onOff},
}

var onOff = []string{"off", "on"}

func controlDefByKey(k string) (controlDef, bool) {
	for _, d := range controlDefs {
		if d.key == k {
			return d, true
		}
	}
	return controlDef{}, false
}

// get reads the control's value from c as one of d.values (or a profile name).
func (d controlDef) get(c lab.Controls) string {
	b := func(v bool) string {
		if v {
			return "on"
		}
		return "off"
	}
	switch d.key {
	case "restore_snapshot":
		return b(c.RestoreSnapshot)
	case "kill_app":
		return b(c.KillApp)
	case "dismiss_dialogs":
		return b(c.DismissDialogs)
	case "drop_caches":
		return b(c.DropCaches)
	case "proxy":
		if c.Proxy == "" {
			return "off"
		}
		return c.Proxy
	case "clock_reset":
		return b(c.ClockReset)
	case "governor":
		return governorName(c.Governor)
	case "tmpfs":
		return b(c.Tmpfs)
	case "aslr":
		return b(c.ASLR != nil && !*c.ASLR)
	case "pin_cpu":
		if c.PinCPU == nil || *c.PinCPU < 0 {
			return "off"
		}
		return strconv.Itoa(*c.PinCPU)
	case "cachegrind":
		return b(c.Cachegrind)
	}
	return ""
}

// governorName names the governor setting: "off", a profile name, or
// "inline" for an inline profile.
func governorName(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "off"
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		if name == "" {
			return "off"
		}
		return name
	}
	return "inline"
}

// setControl writes value v of control k into c. Unknown keys are ignored
// (a newer session may carry controls this build does not know).
func setControl(c *lab.Controls, k, v string) {
	on := v == "on" || v == "true"
	switch k {
	case "restore_snapshot":
		c.RestoreSnapshot = on
	case "kill_app":
		c.KillApp = on
	case "dismiss_dialogs":
		c.DismissDialogs = on
	case "drop_caches":
		c.DropCaches = on
	case "proxy":
		if v == "off" {
			v = ""
		}
		c.Proxy = v
	case "clock_reset":
		c.ClockReset = on
	case "governor":
		switch v {
		case "off", "":
			c.Governor = nil
		case "inline":
			// keep the inline profile as it is
		default:
			raw, _ := json.Marshal(v)
			c.Governor = raw
		}
	case "tmpfs":
		c.Tmpfs = on
	case "aslr":
		if on {
			f := false
			c.ASLR = &f
		} else {
			c.ASLR = nil
		}
	case "pin_cpu":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			c.PinCPU = nil
		} else {
			c.PinCPU = &n
		}
	case "cachegrind":
		c.Cachegrind = on
	}
}
