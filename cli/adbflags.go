package cli

import (
	"flag"

	"github.com/perflab/perflab/lab/adb"
)

// adbFlag is the repeatable --adb HOST:PORT flag every device-taking
// command shares. Each value is checked and normalised as it is parsed
// ("5038" and "tcp:5038" mean 127.0.0.1:5038), so a typo fails with the
// flag's name rather than as a connection error later.
type adbFlag []string

func (a *adbFlag) String() string {
	if a == nil {
		return ""
	}
	s := ""
	for i, v := range *a {
		if i > 0 {
			s += ","
		}
		s += v
	}
	return s
}

func (a *adbFlag) Set(v string) error {
	addr, err := adb.ParseServer(v)
	if err != nil {
		return err
	}
	*a = append(*a, addr)
	return nil
}

// addADBFlag registers --adb on fs. With no --adb the adb backend uses
// ADB_SERVER_SOCKET, ANDROID_ADB_SERVER_PORT or 127.0.0.1:5037, as adb does.
//
//	servers := addADBFlag(fs)
//	... fs.Parse ...
//	opt := devices.Options{ADBServers: *servers}
func addADBFlag(fs *flag.FlagSet) *[]string {
	var a adbFlag
	fs.Var(&a, "adb", "adb server `HOST:PORT` (repeatable; default $ADB_SERVER_SOCKET, $ANDROID_ADB_SERVER_PORT or 127.0.0.1:5037)")
	return (*[]string)(&a)
}
