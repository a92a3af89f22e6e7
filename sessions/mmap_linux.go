package sessions

import "syscall"

// mapPopulate maps every page at once instead of faulting them in one by one.
const mapPopulate = syscall.MAP_POPULATE
