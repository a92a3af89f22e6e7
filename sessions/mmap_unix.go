//go:build unix

package sessions

import (
	"os"
	"syscall"
)

// mapFile maps a regular file read-only instead of copying it onto the
// heap: a large session costs no page faults of fresh memory and no copy,
// which is most of the system time `perflab report` would otherwise spend.
// release unmaps it; nothing decoded may point into data after that (the
// decoder copies every string). Files that cannot be mapped (pipes, empty
// files) are read.
func mapFile(f *os.File) (data []byte, release func(), err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size <= 0 || size != int64(int(size)) {
		return readAll(f)
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED|mapPopulate)
	if err != nil {
		return readAll(f)
	}
	return data, func() { syscall.Munmap(data) }, nil
}
