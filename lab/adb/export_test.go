package adb

// CheckPushed exposes checkPushed to the external tests.
var CheckPushed = (*Device).checkPushed
