//go:build unix

package main

import (
	"os"
	"syscall"
)

// pollable returns a descriptor of f that Go's poller manages, so that a read blocked on an idle
// pipe, FIFO or socket can be ended by a deadline when the run must stop (a signal, a write
// error). Regular files never block for long and terminals are left alone (a terminal left
// non-blocking would trouble the shell): for those, and when anything fails, it returns nil and
// the caller reads f as it is. The caller closes the result.
func pollable(f *os.File) *os.File {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var dup *os.File
	rc.Control(func(fd uintptr) {
		nfd, err := syscall.Dup(int(fd))
		if err != nil {
			return
		}
		if syscall.SetNonblock(nfd, true) != nil {
			syscall.Close(nfd)
			return
		}
		dup = os.NewFile(uintptr(nfd), f.Name())
	})
	return dup
}
