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
	"sync"
	"sync/atomic"
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

// KeptAsPartial reports whether an output path is written under a temporary name beside it, kept
// as NAME.partial when its run stops, as the command's output does for a regular file or a name
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

// ErrAborted is what a write to a Temp gets once it was put aside (Abort).
var ErrAborted = errors.New("the run was stopped")

// Temp is an output file written under a temporary name beside the file it becomes, so that a
// failed run never leaves a file that looks complete: Close renames it into place when the run
// succeeded, and otherwise keeps what was written as NAME.partial, cut to whole packets.
type Temp struct {
	f       *os.File
	tmp     string // the temporary name
	final   string // the file it replaces: the path given, or the file its links lead to
	partial string // set when a failed run's output was kept

	mu      sync.Mutex   // held by writes, by Close and by Abort
	closed  atomic.Bool  // put in place, kept or removed: no more writes
	written atomic.Int64 // bytes of the writes that completed
}

// CreateOutput creates the temporary file of the output path. A link is followed: the file it
// leads to is written, and the link stays a link. Its errors name path, not the temporary name.
func CreateOutput(path string) (*Temp, error) {
	final := FollowLinks(path)
	dir, base := filepath.Split(final)
	if dir == "" {
		dir = "."
	}
	f, err := CreateTemp(dir, "."+base+".", ".tmp")
	if err != nil {
		parent := filepath.Dir(final)
		if _, serr := os.Stat(parent); errors.Is(serr, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot write %s: the directory %s does not exist: create it first or name a file in another", path, parent)
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot create %s: %v", path, err)
	}
	return &Temp{f: f, tmp: f.Name(), final: final}, nil
}

// Write writes to the temporary file, under the lock, so that Abort never cuts the file while a
// write is extending it.
func (t *Temp) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return 0, ErrAborted
	}
	n, err := t.f.Write(p)
	if err == nil {
		t.written.Add(int64(n))
	}
	return n, err
}

// Partial is the name the file was kept under after a failure, or "".
func (t *Temp) Partial() string { return t.partial }

// Close finishes the file: when ok it puts it in place, with the mode of the file it replaces,
// if any; otherwise it keeps the first keep bytes (whole packets) as NAME.partial, or removes
// the temporary file when there are none.
func (t *Temp) Close(ok bool, keep int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Swap(true) {
		return ErrAborted
	}
	var err error
	if !ok {
		// A write cut short (a full disk) may have left part of a packet after the whole ones.
		err = t.f.Truncate(keep)
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if ok && err == nil {
		if fi, serr := os.Stat(t.final); serr == nil {
			err = os.Chmod(t.tmp, fi.Mode().Perm())
		}
		if err == nil {
			err = os.Rename(t.tmp, t.final)
		}
		if err == nil {
			return nil
		}
	}
	t.keep(keep)
	return err
}

// keep renames the temporary file NAME.partial, or removes it when it holds no packet.
func (t *Temp) keep(n int64) {
	if n == 0 {
		os.Remove(t.tmp)
		return
	}
	t.partial = t.final + ".partial"
	if os.Rename(t.tmp, t.partial) != nil {
		os.Remove(t.tmp)
		t.partial = ""
	}
}

// Abort puts the file aside at once, for a run that must end without waiting for the packets in
// flight: the temporary file, cut after the last write that completed (whole packets), is kept
// as NAME.partial, and later writes fail. It returns the name it was kept under, or "". A write
// still under way after a second (a disk that hangs) is not waited for: the file is then kept
// as it is.
func (t *Temp) Abort() string {
	locked, release := make(chan struct{}), make(chan struct{})
	go func() {
		t.mu.Lock()
		close(locked)
		<-release
		t.mu.Unlock()
	}()
	defer close(release)
	select {
	case <-locked:
		if !t.closed.Swap(true) {
			n := t.written.Load()
			t.f.Truncate(n)
			t.f.Close()
			t.keep(n)
		}
	case <-time.After(time.Second):
		if !t.closed.Swap(true) {
			t.keep(1)
		}
	}
	return t.partial
}
