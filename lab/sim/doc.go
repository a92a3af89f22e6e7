// Package sim is perflab's simulated phone: a model of an Android device
// good enough that every noise control visibly matters, seeded so tests are
// reproducible, and running on simulated time so a ten-minute stability
// check or a 200-trial experiment takes milliseconds.
//
// # Model
//
//   - Presets ([Presets], [Lookup]): "nexus5" (2013 quad-core Krait,
//     interactive governor, mpdecision), "pixel" (2018 big.LITTLE,
//     4 little + 4 big, schedutil) and "pixel4" (2019 tri-cluster: 4 little,
//     3 mid and 1 prime core). Each has real frequency tables, a kgsl
//     GPU, msm_thermal core control, cpu_boost input boost and mpdecision.
//   - Thermal: two nodes (die, package) heated by power that grows as f·V²
//     plus temperature-dependent leakage. Above Thermal.TripC msm_thermal
//     lowers the frequency cap one table step per second; below TripC minus
//     the hysteresis it raises it. With core control on, big cores go
//     offline above CoreTripC. [Preset.SteadyTempC] is the closed-form steady
//     state, [Preset.Sustainable] the best lock below the trip point.
//   - Governors: performance, powersave, userspace (scaling_setspeed),
//     schedutil (1.25·max·util with a PELT-like util), interactive (hispeed
//     jump) and ondemand; input boost raises the floor for input_boost_ms
//     after a touch; mpdecision takes idle cores offline.
//   - Apps ([Apps]): "feed" and "notes". A launch ([Phone.Launch]) costs CPU
//     cycles run under the governor, page-cache misses (drop_caches), fsync
//     latency unless the data dir is on tmpfs, network round trips that
//     drift unless the proxy replays, database work that grows every trial
//     unless the snapshot is restored, a cache refresh once the device
//     clock passes the TTL unless the clock is reset, a slowdown per crash
//     dialog left on screen unless dismissed, and CPU stolen by the previous
//     instance unless the app is killed. [Launch.Breakdown] shows each part.
//   - Builds: a sim build is {app, effect_pct}; effect_pct multiplies the
//     whole startup time, so validation can score detection against a known
//     truth. Its Android package is [PackageName] (org.perflab.sim.feed,
//     org.perflab.sim.feed.p1_5 for +1.5%); every such name is installable.
//
// # Driving the model (for the adb simdevice and tests)
//
// [New] boots a [Phone]. All of its methods are safe for concurrent use and
// map one-to-one onto what an Android shell does:
//
//	cat PATH / echo V > PATH   ReadFile, WriteFile (kernel files validate like the
//	                           kernel: EINVAL on a bad governor; kgsl snaps max_gpuclk
//	                           to a power level), AppendFile for >>
//	ls, stat, mkdir -p         ReadDir, Stat, MkdirAll
//	rm -rf, cp -a SRC DST      RemoveAll, Copy (DST is the exact target path)
//	chmod                      Chmod (the shell runs as root; modes do not gate writes)
//	mount -t tmpfs / umount    MountTmpfs, Unmount, Mounts
//	getprop / setprop          Prop, Props, SetProp ("perflab.proxy" = off|record|replay)
//	start / stop SERVICE       ServiceRunning, SetService, Services (mpdecision, ...)
//	date / date -s             Now, SetClock
//	pm install/path/clear/list Install, PackagePath, ClearData, Packages
//	am start -W PKG/.Main      Launch (TotalTime = Launch.Total, WaitTime = Launch.Wait;
//	                           the app's own metrics in Launch.Metrics: startup_ms,
//	                           bytes_written, for the PERFLAB_METRIC reverse socket)
//	am force-stop PKG          ForceStop; Running reports a live process
//	dismiss crash dialogs      Dialogs (for dumpsys window), DismissDialogs
//	echo 3 > drop_caches       WriteFile(DropCachesPath, "3")
//	perflab-probe              StartProbe, then ProbeRun.Next(interval) per sample,
//	                           or RunProbe to stream; samples are lab.ProbeSample
//	(time passing)             Advance(d); Uptime
//
// Kernel files live under /sys and /proc: /sys/devices/system/cpu/cpuN/
// cpufreq/{scaling_governor, scaling_available_governors,
// scaling_available_frequencies, scaling_min_freq, scaling_max_freq,
// scaling_setspeed, scaling_cur_freq, cpuinfo_max_freq, related_cpus, ...},
// cpuN/online, cpufreq/policyN, /sys/class/kgsl/kgsl-3d0 (a link to the
// preset's GPU directory) with devfreq/{governor,min_freq,...} and
// max_gpuclk, /sys/module/msm_thermal/core_control/enabled,
// /sys/module/cpu_boost/parameters/input_boost_freq,
// /sys/class/thermal/thermal_zone0/temp, /proc/sys/vm/drop_caches.
// Errors are *fs.PathError wrapping fs.ErrNotExist, fs.ErrPermission or a
// syscall.Errno (EINVAL, EBUSY, EISDIR, ENOTDIR), so a shell can print what
// toybox would.
//
// Time only moves inside calls. A server pacing the model at wall-clock
// speed calls Advance with the real time that passed between commands.
//
// # As a perflab device
//
// [Open] returns a [Device] implementing lab.Device, lab.Prober and
// lab.Governor ("sim:<preset>"). Setup applies the controls, installs the
// builds, records proxy traffic, runs each build once and snapshots its
// state; RunTrial runs the reset procedure the trial's controls ask for
// (restore_snapshot, kill_app, dismiss_dialogs, clock_reset, drop_caches;
// governor, tmpfs and proxy are switched whenever they change) and launches
// the app; Close restores the stock governor settings unless the profile
// says keep. Governor profiles go through package governor over the
// phone's sysfs ([Files]), the same code real devices use.
package sim
