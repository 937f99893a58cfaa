//go:build !unix

package runfiles

import "io/fs"

// fileID has no identity to give where os.SameFile's is not a device and inode: Keys then
// compares the paths with their links resolved.
func fileID(fs.FileInfo) (string, bool) { return "", false }
