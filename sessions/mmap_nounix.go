//go:build !unix

package sessions

import "os"

func mapFile(f *os.File) ([]byte, func(), error) { return readAll(f) }
