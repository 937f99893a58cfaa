package keys

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// An ECM cache is a text file of a key server's answers, one line per distinct ECM, that a run
// appends to while it takes its keys from the server and that a later run reads to descramble
// a recording of the same stream without one:
//
//	# tsdescramble ECM cache, format 1: CAID ECM_PID SHA-256(ECM section) EVEN_CW ODD_CW
//	0B00 0x0500 3f0c…(64 hex digits)…9a1e 11223366445566FF 0000000000000000
//
// The CA system id is 4 hex digits, the ECM PID decimal or 0x hex, the digest the SHA-256 of the
// whole ECM section from its table_id to its last byte (so an ECM of the other table, 0x80 or
// 0x81, is another ECM), then the even and the odd CW the server answered with, 16 or 32 hex
// digits each, all zeros for a parity it gave no CW for. The file holds control words, as a .cwl
// log does: it is created, and made, readable by its owner only (0600).
//
// The digest is SHA-256 in full: a cache answers an ECM only when the digests are equal, and a
// wrong answer would scramble a crypto period, so a collision must be out of the question, not
// merely unlikely; the 32 bytes more per line than a truncated digest are nothing beside a day
// of ECMs, and anyone can check a line with sha256sum.
//
// Each line is appended with one write and synced to the disk before the next answer is taken:
// a crash, a power loss or a full disk can tear the last line only. Reading skips a line that
// is not whole (no newline, a field missing or wrong) and counts it; an append after such a
// line starts a line of its own, so that one torn line costs that ECM alone. Where several
// lines give the same ECM, the last one holds. Several runs may read one cache at once; one
// run at a time should append to it.

// ECMCacheHeader starts the first line of every ECM cache: a file that starts otherwise is not
// one, and is neither read nor appended to.
const ECMCacheHeader = "# tsdescramble ECM cache"

// ecmCacheFirstLine is the whole first line a new cache gets.
const ecmCacheFirstLine = ECMCacheHeader + ", format 1: CAID ECM_PID SHA-256(ECM section) EVEN_CW ODD_CW\n"

// ErrNotECMCache is wrapped by the error for a file whose first line is not ECMCacheHeader.
var ErrNotECMCache = errors.New("not an ECM cache (its first line is not \"" + ECMCacheHeader + "\")")

// maxECMCacheLine bounds a cache line: a longer one is no answer and is skipped.
const maxECMCacheLine = 512

// ECMAnswer is one line of an ECM cache: an ECM and the CWs a key server answered it with.
type ECMAnswer struct {
	CAID   uint16
	PID    uint16
	Digest [sha256.Size]byte // SHA-256 of the ECM section (ECMDigest)
	// Even and Odd are the CWs of the answer, 8 or 16 bytes each; all zeros means no CW for
	// that parity.
	Even, Odd []byte
}

// ECMDigest returns the digest an ECM cache keeps of an ECM section.
func ECMDigest(section []byte) [sha256.Size]byte { return sha256.Sum256(section) }

// AppendLine appends the answer's cache line, with its newline, to b.
func (a *ECMAnswer) AppendLine(b []byte) []byte {
	b = fmt.Appendf(b, "%04X %#04x ", a.CAID, a.PID)
	b = hex.AppendEncode(b, a.Digest[:])
	b = append(b, ' ')
	b = appendUpperHex(b, a.Even)
	b = append(b, ' ')
	b = appendUpperHex(b, a.Odd)
	return append(b, '\n')
}

func appendUpperHex(b, cw []byte) []byte {
	const digits = "0123456789ABCDEF"
	for _, x := range cw {
		b = append(b, digits[x>>4], digits[x&15])
	}
	return b
}

// ParseECMCacheLine reads one line of an ECM cache, without its newline. Its errors say which
// field is wrong and never repeat a control word.
func ParseECMCacheLine(line string) (ECMAnswer, error) {
	var a ECMAnswer
	// Fields are separated by spaces and tabs only: a line read alone and one read in a file
	// must be the same answer, and a newline inside would make them two lines there.
	f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(f) != 5 {
		return a, fmt.Errorf("want 5 fields (CAID ECM_PID SHA-256 EVEN_CW ODD_CW), found %d", len(f))
	}
	caid, err := strconv.ParseUint(f[0], 16, 16)
	if err != nil || len(f[0]) != 4 {
		return a, errors.New("the CA system id is not 4 hex digits")
	}
	pid, err := strconv.ParseUint(f[1], 0, 16)
	if err != nil || pid > 0x1FFF {
		return a, errors.New("the ECM PID is not a PID (decimal or 0x hex, at most 0x1FFF)")
	}
	if len(f[2]) != 2*sha256.Size {
		return a, fmt.Errorf("the digest is not %d hex digits", 2*sha256.Size)
	}
	if _, err := hex.Decode(a.Digest[:], []byte(f[2])); err != nil {
		return a, errors.New("the digest is not hex")
	}
	for i, dst := range []*[]byte{&a.Even, &a.Odd} {
		s := f[3+i]
		if len(s) != 2*CWSize && len(s) != 4*CWSize {
			return a, fmt.Errorf("the %s CW is not %d or %d hex digits", parityName(i == 1), 2*CWSize, 4*CWSize)
		}
		cw, err := hex.DecodeString(s)
		if err != nil {
			return a, fmt.Errorf("the %s CW is not hex", parityName(i == 1))
		}
		*dst = cw
	}
	a.CAID, a.PID = uint16(caid), uint16(pid)
	return a, nil
}

// ECMCache is what an ECM cache file holds: the answer of each ECM, by its digest. It answers
// ECM sections (Answer) and counts what it was asked; it is safe for concurrent use.
type ECMCache struct {
	Name    string // the file name as given, for messages
	answers map[[sha256.Size]byte]ECMAnswer
	pids    []ECMPID // the ECM PIDs of the answers, in order of first appearance

	// Skipped counts the lines that were not read (torn or wrong), FirstSkipped says the first
	// of them ("name:line: what is wrong"), and Torn says that the last line had no newline.
	Skipped      int
	FirstSkipped string
	Torn         bool

	mu           sync.Mutex
	hits, misses int64
}

// ECMPID is an ECM PID of a CA system, as a cache's answers name them.
type ECMPID struct{ CAID, PID uint16 }

// LoadECMCache reads the ECM cache at path (ReadECMCache).
func LoadECMCache(path string) (*ECMCache, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadECMCache(f, path)
}

// ReadECMCache reads an ECM cache; name is used in messages. A file whose first line is not
// ECMCacheHeader gives an error wrapping ErrNotECMCache; an empty one, or one that holds only
// the start of that line (a cache whose creation was cut short), holds no answer. Comments
// ('#') and blank lines are skipped; so are torn and wrong lines, counted in Skipped.
func ReadECMCache(r io.Reader, name string) (*ECMCache, error) {
	c := &ECMCache{Name: name, answers: map[[sha256.Size]byte]ECMAnswer{}}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readCacheLine(br)
		if len(line) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		whole := err == nil // ends with its newline
		if n == 1 {
			if !bytes.HasPrefix(line, []byte(ECMCacheHeader)) {
				if !whole && strings.HasPrefix(ECMCacheHeader, string(line)) {
					break // the header, cut short: a cache with no answer yet
				}
				return nil, fmt.Errorf("%s: %w", name, ErrNotECMCache)
			}
			continue
		}
		t := strings.TrimSpace(string(line))
		switch {
		case !whole:
			c.Torn = true
			c.skip(name, n, "the last line has no newline (a write cut short)")
		case t == "" || t[0] == '#':
		default:
			a, perr := ParseECMCacheLine(t)
			if perr != nil {
				c.skip(name, n, perr.Error())
				continue
			}
			c.add(a)
		}
		if !whole {
			break
		}
	}
	return c, nil
}

// readCacheLine returns the next line without its newline, and io.EOF for a last line without
// one. A line longer than maxECMCacheLine is returned cut, and the rest of it skipped.
func readCacheLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line) < maxECMCacheLine {
			line = append(line, chunk[:min(len(chunk), maxECMCacheLine-len(line))]...)
		}
		switch err {
		case nil:
			return bytes.TrimSuffix(line, []byte{'\n'}), nil
		case bufio.ErrBufferFull:
			continue
		}
		return line, err
	}
}

func (c *ECMCache) skip(name string, line int, why string) {
	c.Skipped++
	if c.FirstSkipped == "" {
		c.FirstSkipped = fmt.Sprintf("%s:%d: %s", name, line, why)
	}
}

func (c *ECMCache) add(a ECMAnswer) {
	if _, ok := c.answers[a.Digest]; !ok {
		p := ECMPID{a.CAID, a.PID}
		if !containsPID(c.pids, p) {
			c.pids = append(c.pids, p)
		}
	}
	c.answers[a.Digest] = a
}

func containsPID(pids []ECMPID, p ECMPID) bool {
	for _, q := range pids {
		if q == p {
			return true
		}
	}
	return false
}

// Len returns the number of distinct ECMs the cache answers.
func (c *ECMCache) Len() int { return len(c.answers) }

// ECMPIDs returns the ECM PIDs the cache's answers were recorded from, with their CA systems,
// in the file's order.
func (c *ECMCache) ECMPIDs() []ECMPID { return append([]ECMPID(nil), c.pids...) }

// Holds reports whether the answers were recorded from ECMs of this CA system on this PID.
func (c *ECMCache) Holds(caid, pid uint16) bool { return containsPID(c.pids, ECMPID{caid, pid}) }

// Answer returns the CWs the cache holds for an ECM section, even then odd, and counts a hit;
// or ok false, and counts a miss. The CWs are the cache's: do not modify them.
func (c *ECMCache) Answer(section []byte) (even, odd []byte, ok bool) {
	a, ok := c.answers[ECMDigest(section)]
	c.mu.Lock()
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	c.mu.Unlock()
	return a.Even, a.Odd, ok
}

// Stats returns the counts of a cache that answers ECMs.
func (c *ECMCache) Stats() ECMCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ECMCacheStats{File: c.Name, Mode: "read", Entries: c.Len(), SkippedLines: c.Skipped, Hits: c.hits, Misses: c.misses}
}

// ECMCacheStats counts what an ECM cache did in a run, under these JSON names (-stats:
// live_keys.ecm_cache).
type ECMCacheStats struct {
	File string `json:"file"`
	// Mode is "read" for a cache that answers the stream's ECMs, without a key server, and
	// "record" for one that a key server's answers are appended to.
	Mode string `json:"mode"`
	// Entries is the number of distinct ECMs the file held when the run began; SkippedLines
	// the lines it could not read (a torn last line among them).
	Entries      int `json:"entries"`
	SkippedLines int `json:"lines_skipped"`
	// Hits and Misses count the distinct ECMs the cache held and did not hold: reading, those
	// answered from it and those left without a key; recording, the server's answers it
	// held already (not written again) and those it did not.
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
	// Appended counts the lines written, WriteErrors the answers that could not be.
	Appended    int64 `json:"appended"`
	WriteErrors int64 `json:"write_errors"`
}

// ECMCacheWriter appends answers to an ECM cache. It is safe for concurrent use.
type ECMCacheWriter struct {
	mu      sync.Mutex
	f       *os.File
	name    string
	held    map[[sha256.Size]byte]string // the CWs of each ECM the file holds, as their hex
	newline bool                         // the file may end in a line cut short: start a new one
	created bool                         // AppendECMCache created the file
	st      ECMCacheStats
}

// AppendECMCache opens the ECM cache at path for appending, creating it (mode 0600, with its
// first line) if it does not exist; an existing cache is made 0600 too, as it holds control
// words. The answers it holds are read first, so that an ECM answered again with the same CWs
// is not written again. A file that is not an ECM cache gives an error wrapping ErrNotECMCache
// and is left as it was.
func AppendECMCache(path string) (*ECMCacheWriter, error) {
	created := true
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		created = false
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	}
	if err != nil {
		return nil, err
	}
	w, err := newCacheWriter(f, path)
	if err != nil {
		f.Close()
		if created {
			os.Remove(path)
		}
		return nil, err
	}
	w.created = created
	return w, nil
}

func newCacheWriter(f *os.File, path string) (*ECMCacheWriter, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		// A pipe or a device would be read for ever, or not appended to line by line.
		return nil, fmt.Errorf("%s is not a regular file: an ECM cache is one", path)
	}
	c, err := ReadECMCache(f, path)
	if err != nil {
		return nil, err
	}
	w := &ECMCacheWriter{f: f, name: path, held: map[[sha256.Size]byte]string{}}
	for d, a := range c.answers {
		w.held[d] = cwsKey(a.Even, a.Odd)
	}
	w.st = ECMCacheStats{File: path, Mode: "record", Entries: c.Len(), SkippedLines: c.Skipped}
	f.Chmod(0o600)
	if c.Len() == 0 && c.Skipped == 0 && fi.Size() < int64(len(ecmCacheFirstLine)) {
		// New, or its creation was cut short before the first line was whole.
		if err := f.Truncate(0); err != nil {
			return nil, err
		}
		if _, err := f.WriteString(ecmCacheFirstLine); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		syncDir(path)
		return w, nil
	}
	w.newline = c.Torn
	return w, nil
}

// syncDir makes a new file's name durable: its directory is synced too.
func syncDir(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
}

func cwsKey(even, odd []byte) string { return string(even) + "|" + string(odd) }

// Add appends an answer and syncs the file, unless the cache holds this ECM with the same CWs
// already; it reports whether a line was written. An answer whose CWs differ from those held
// is written: the last line of an ECM is the one a reader takes.
func (w *ECMCacheWriter) Add(a ECMAnswer) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := cwsKey(a.Even, a.Odd)
	if held, ok := w.held[a.Digest]; ok && held == k {
		w.st.Hits++
		return false, nil
	}
	w.st.Misses++
	b := make([]byte, 0, 160)
	if w.newline {
		b = append(b, '\n') // after a torn line; a blank line is skipped when read
	}
	b = a.AppendLine(b)
	if _, err := w.f.Write(b); err != nil {
		w.newline = true // the line may be torn: the next starts afresh
		w.st.WriteErrors++
		return false, err
	}
	if err := w.f.Sync(); err != nil {
		w.st.WriteErrors++
		return false, err
	}
	w.newline = false
	w.held[a.Digest] = k
	w.st.Appended++
	return true, nil
}

// Stats returns the counts of the answers appended so far.
func (w *ECMCacheWriter) Stats() ECMCacheStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

// Close closes the file. A cache the writer created and wrote no answer to is removed: a run
// that failed, or whose server answered nothing, leaves no file behind that would read as a
// cache with nothing in it.
func (w *ECMCacheWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.f.Close()
	if w.created && w.st.Appended == 0 {
		os.Remove(w.name)
	}
	return err
}
