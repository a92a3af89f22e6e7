package adb

// CheckPushed exposes checkPushed to the external tests.
var CheckPushed = (*Device).checkPushed

// ExposeLocal exposes exposeLocal to the external tests.
var ExposeLocal = (*Client).exposeLocal
