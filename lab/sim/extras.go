package sim

// Properties through which a simulated phone advertises what it can do
// beyond a real one. Served over adb (perflab simdevice), it is an ordinary
// phone to the adb backend, which knows nothing of the simulator; lab/devices
// reads these properties and adds the extras around the adb device.
const (
	PropExtras = "perflab.sim.extras" // comma-separated Extra* names
	PropPreset = "perflab.sim.preset" // the preset's name ("pixel", ...)
	PropProxy  = "perflab.proxy"      // off|record|replay: the network model's proxy switch (setprop, as root)
	// PropSlowdown is the unit's slowdown against its model (Phone.SetSlowdown),
	// the truth a device pool's per-device analysis can be checked against.
	PropSlowdown = "perflab.sim.slowdown"
	// PropHostPlatform is the GOOS_GOARCH of the host serving the phone,
	// whose programs its shell runs (ExtraHostBinaries).
	PropHostPlatform = "perflab.sim.host_platform"
)

// The extras a simulated phone advertises in PropExtras.
const (
	ExtraAdvance  = "advance"  // `perflab-advance SECONDS` advances simulated time (a cool-down takes no wall time)
	ExtraProxy    = "proxy"    // `setprop perflab.proxy MODE` switches the proxy model
	ExtraApps     = "apps"     // a build naming a sim app is installed as PackageName(app, effect), activity MainActivity
	ExtraProfiles = "profiles" // the preset named by PropPreset has built-in governor profiles
	// ExtraHostBinaries: the shell runs programs built for the host that
	// serves the phone (linux, the host's architecture) in place of the
	// phone's ABI, a perflab suite worker's test binaries among them.
	ExtraHostBinaries = "host_binaries"
)

// Extras is the PropExtras value of every simulated phone.
const Extras = ExtraAdvance + "," + ExtraProxy + "," + ExtraApps + "," + ExtraProfiles + "," + ExtraHostBinaries
