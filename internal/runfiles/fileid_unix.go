//go:build unix

package runfiles

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileID returns the device and inode of a file, as os.SameFile compares them, as a string a
// map can hold: a batch compares the files of thousands of jobs at once .
func fileID(fi fs.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), true
}
