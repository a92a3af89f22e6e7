package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
)

const devicesUsage = `
Usage: perflab devices [--json] [--adb HOST:PORT]...

Lists the devices perflab can run on: the built-in simulated phones
(sim:<preset>), this host (local) and phones on adb servers, each with its
model, state and capabilities (what the controls stepper can switch on).
A capability a device lacks comes with a note saying why.

Examples:
  perflab devices
  perflab devices --json | jq -r '.[].id'
  perflab devices --adb 127.0.0.1:5037 --adb lab7:5037   # phones on two hosts

Manual: docs/devices.md
`

// cmdDevices lists devices.
func cmdDevices(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newDeviceFlagSet("devices", stderr, devicesUsage)
	asJSON := fs.Bool("json", false, "print a JSON array of devices")
	var acc deviceAccess
	acc.register(fs)
	if _, code := parseDeviceCommand(fs, args, stderr, 0, 0); code >= 0 {
		return code
	}
	if !acc.openOr(ctx, "perflab devices", stderr) {
		return exitError
	}
	defer acc.close()
	list, err := devices.List(ctx, acc.options())
	if err != nil {
		// One backend failing (no adb server) does not hide the others.
		fmt.Fprintln(stderr, "perflab devices:", err)
	}
	if *asJSON {
		if list == nil {
			list = []lab.DeviceInfo{}
		}
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		writeDeviceTable(stdout, list)
	}
	if len(list) == 0 {
		return 1
	}
	return 0
}

func writeDeviceTable(w io.Writer, list []lab.DeviceInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODEL\tSTATE\tCAPABILITIES")
	for _, d := range list {
		model := d.Model
		if model == "" {
			model = "-"
		}
		state := d.State
		if state == "" {
			state = "device"
		}
		caps := append([]string(nil), d.Caps...)
		sort.Strings(caps)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.ID, model, state, strings.Join(caps, " "))
	}
	tw.Flush()
	for _, d := range list {
		if desc := d.Props["description"]; desc != "" {
			fmt.Fprintf(w, "%s: %s\n", d.ID, desc)
		}
		if d.Server != "" {
			fmt.Fprintf(w, "%s: on adb server %s\n", d.ID, d.Server)
		}
		for _, n := range d.Notes {
			fmt.Fprintf(w, "%s: %s\n", d.ID, n)
		}
	}
}
