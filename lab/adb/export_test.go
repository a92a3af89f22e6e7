package adb

// CheckPushed exposes checkPushed to the external tests.
var CheckPushed = (*Device).checkPushed

// ExposeLocal exposes exposeLocal to the external tests.
var ExposeLocal = (*Client).exposeLocal

// DropLock lets the phone's lock go as the death of d's process would,
// leaving everything else of d as it was.
func DropLock(d *Device) { d.lock.Release() }
