package devices

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
)

// openADB opens "adb:SERIAL" on the first of opt.ADBServers (default: the
// server adb itself would use) that lists it, or "adb:SERIAL@HOST:PORT"
// on that server only. A simulated phone (perflab simdevice) comes with
// the extras it advertises (simPhone).
func openADB(ctx context.Context, serial string, opt Options) (lab.Device, error) {
	if s, server, ok := cutServer(serial); ok {
		addr, err := adb.ParseServer(server)
		if err != nil {
			return nil, fmt.Errorf("device \"adb:%s\": %w", serial, err)
		}
		serial, opt.ADBServers = s, []string{addr}
	}
	if serial == "" {
		return nil, fmt.Errorf("device \"adb:\": name the phone, e.g. adb:R58M123ABC or adb:127.0.0.1:6520 (perflab devices lists them)")
	}
	d, err := adb.OpenVia(ctx, serial, adbClients(opt))
	if err != nil {
		return nil, err
	}
	w, err := WithSimExtras(ctx, d)
	if err != nil {
		d.Close()
		return nil, err
	}
	return w, nil
}

// listADB lists every device of every adb server, offline and
// unauthorized ones included.
// Without --adb, a missing default server just means no phones.
func listADB(ctx context.Context, opt Options) ([]lab.DeviceInfo, error) {
	infos, err := adb.ListVia(ctx, adbClients(opt))
	if len(opt.ADBServers) == 0 && errors.Is(err, adb.ErrNoServer) {
		return infos, nil
	}
	return infos, err
}

// cutServer splits "SERIAL@SERVER" at its last '@' (serials have none).
func cutServer(arg string) (serial, server string, ok bool) {
	i := strings.LastIndexByte(arg, '@')
	if i < 0 {
		return arg, "", false
	}
	return arg[:i], arg[i+1:], true
}
