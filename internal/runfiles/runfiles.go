// Package runfiles knows the files a run reads and writes as paths: the file a path leads
// to, whether two paths name one file, and the names an output is written under, a temporary
// one beside it until the run succeeds and NAME.partial after a run that stopped. The command
// writes its outputs by these names, and a batch finds what earlier runs left by them.
package runfiles

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SameFile reports whether two paths name one file, or would once created: the same
// device and inode for files that exist (so hard and symbolic links count), the same
// directory and name for files that do not exist yet, or the same cleaned absolute path.
// Device files are never the same as anything: writing /dev/null twice replaces nothing.
func SameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && IsDevice(fa) || errB == nil && IsDevice(fb) {
		return false
	}
	if AbsPath(a) == AbsPath(b) {
		return true
	}
	switch {
	case errA == nil && errB == nil:
		return os.SameFile(fa, fb)
	case errA != nil && errB != nil:
		// Neither exists yet: the same name in the same directory, perhaps reached through
		// different links, is one file once written.
		if filepath.Base(AbsPath(a)) != filepath.Base(AbsPath(b)) {
			return false
		}
		da, errA := os.Stat(filepath.Dir(AbsPath(a)))
		db, errB := os.Stat(filepath.Dir(AbsPath(b)))
		return errA == nil && errB == nil && os.SameFile(da, db)
	}
	// A path that does not exist yet is not an existing file.
	return false
}

// IsDevice reports whether fi is a device.
func IsDevice(fi fs.FileInfo) bool { return fi.Mode()&os.ModeDevice != 0 }

// AbsPath is the cleaned absolute form of p, or p cleaned if the working directory is
// unknown.
func AbsPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// FollowLinks returns the file that path leads to through symbolic links, which need not exist
// yet (a link to a file the run creates); path itself when it is not a link.
func FollowLinks(path string) string {
	for range 40 { // as the kernel's limit on links in a path
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path
		}
		target, err := os.Readlink(path)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return path
}

// CreateTemp creates a new file in dir named prefix, a random number and suffix, as
// os.CreateTemp does but with mode 0666 less the umask, as os.Create gives: the output gets the
// permissions any new file of the user gets (close gives an existing file's mode back).
func CreateTemp(dir, prefix, suffix string) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+suffix)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// KeptAsPartial reports whether an output path is written under a temporary name beside it,
// kept as NAME.partial when its run stops, as the command's output does for a regular file or a name
// that does not exist yet; a device or a named pipe is written directly.
func KeptAsPartial(path string) bool {
	fi, err := os.Stat(path)
	return err != nil || fi.Mode().IsRegular()
}

// Keys gives each path a string that is the same for two paths when they name one file,
// or would once it is created: the device and inode of a file that exists (fileID), else the
// cleaned absolute path of the file its links lead to, with the links of its directory
// resolved. A device has none: it is never the same as anything (writing /dev/null twice
// replaces nothing). The directories resolved are kept: the outputs of thousands of jobs are
// in a few, and resolving the links of a path looks at each of its parts; so are the paths
// looked at, as many jobs read one key file.
type Keys struct {
	dirs  map[string]string
	paths map[string]string // "" for a device
}

func (k *Keys) Key(path string) (string, bool) {
	if key, ok := k.paths[path]; ok {
		return key, key != ""
	}
	key, _ := k.lookUp(path)
	if k.paths == nil {
		k.paths = map[string]string{}
	}
	k.paths[path] = key
	return key, key != ""
}

func (k *Keys) lookUp(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err == nil {
		if IsDevice(fi) {
			return "", false
		}
		if id, ok := fileID(fi); ok {
			return "id:" + id, true
		}
		if r, err := filepath.EvalSymlinks(AbsPath(path)); err == nil {
			return "path:" + r, true
		}
	}
	p := AbsPath(FollowLinks(path))
	dir := filepath.Dir(p)
	r, ok := k.dirs[dir]
	if !ok {
		r = dir
		if d, err := filepath.EvalSymlinks(dir); err == nil {
			r = d
		}
		if k.dirs == nil {
			k.dirs = map[string]string{}
		}
		k.dirs[dir] = r
	}
	return "path:" + filepath.Join(r, filepath.Base(p)), true
}

// LeftoverOf returns the name of the output whose temporary file (".NAME.N.tmp", N a number
// as createTemp writes it) or .partial (NAME.partial) name is, or "".
func LeftoverOf(name string) string {
	if base, ok := strings.CutSuffix(name, ".partial"); ok {
		return base
	}
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return ""
	}
	if rest, ok = strings.CutSuffix(rest, ".tmp"); !ok {
		return ""
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return ""
	}
	n, err := strconv.ParseUint(rest[i+1:], 10, 32)
	if err != nil || strconv.FormatUint(n, 10) != rest[i+1:] {
		return ""
	}
	return rest[:i]
}

// Records are the input file a run read and the output file it put in place, each when it is
// a regular file, as its statistics give them: what a batch compares with the files as they
// are on a later run, to tell a finished job from one whose input changed or whose statistics
// belong to another job.
type Records struct {
	In  *Record `json:"in,omitempty"`
	Out *Record `json:"out,omitempty"`
}

// Record is a file as a run found it: its absolute path, its size and, for the input, its
// modification time as the run began to read it. A rewritten input of the same size has
// another time; the output's time is left out, as copying or touching the output changes it
// and not what it holds.
type Record struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time,omitzero"`
}

// RecordOf returns the record of the regular file at path, with its modification time when
// withTime is set, or nil for anything else (a pipe, a device, a missing file).
func RecordOf(path string, withTime bool) *Record {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	r := &Record{Path: AbsPath(path), Size: fi.Size()}
	if withTime {
		r.ModTime = fi.ModTime()
	}
	return r
}

// UnwrapPath names a path error's path and reason without its operation ("open", "stat"),
// for a message that says what was being done.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}
