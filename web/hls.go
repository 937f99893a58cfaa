package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/grafov/m3u8"
)

const (
	// maxPlaylist bounds a playlist's size: an EVENT playlist hours long is a few MiB.
	maxPlaylist = 16 << 20
	// segmentRetries is how many times a segment that failed to download is tried again
	// before it is skipped (live) or ends the input (VOD).
	segmentRetries = 3
	// minTarget and maxTarget bound the target duration the reloads are timed by, so that a
	// playlist that says 0 or a day neither floods the server nor stalls the input.
	minTarget = 100 * time.Millisecond
	maxTarget = time.Minute
	// liveEdge is how many target durations from a live playlist's end reading starts (RFC
	// 8216 6.3.3: a client SHOULD NOT start at a segment less than three from the end).
	liveEdge = 3
	// staleLoads is how many loads in a row a live playlist may end before the segment read
	// last before its media sequence is taken to have started over (an encoder restarted
	// with sequence 0). A single such load is more likely a cache's older copy.
	staleLoads = 3
)

// errRefused marks a playlist this package will not read whatever the retries: its segments
// are not clear MPEG-TS.
var errRefused = errors.New("segments are not clear MPEG-TS")

// playlist is what a playlist says to the Reader: a master's variant to read, or a media
// playlist's segments.
type playlist struct {
	variant  *url.URL // set for a master playlist
	variants int      // how many variants a master playlist offers
	media    *mediaPlaylist
}

// mediaPlaylist is a media playlist's segments as the Reader fetches them.
type mediaPlaylist struct {
	segments []segment     // in media-sequence order, consecutive
	live     bool          // no EXT-X-ENDLIST: the playlist is reloaded
	target   time.Duration // EXT-X-TARGETDURATION, bounded to [minTarget, maxTarget]
	start    int           // the segment a reader that loads the playlist first starts at
}

// segment is one media segment.
type segment struct {
	seq    uint64   // media sequence number
	url    *url.URL // absolute, http or https
	offset int64    // EXT-X-BYTERANGE: where the segment starts in the resource
	length int64    // EXT-X-BYTERANGE: its length; -1: the whole resource
}

// parsePlaylist decodes a playlist fetched from base. For a master playlist it picks the
// variant: number variant when hasVariant, else the one of the highest BANDWIDTH (the first
// of them on a tie). Errors name base redacted.
func parsePlaylist(body []byte, base *url.URL, variant int, hasVariant bool) (playlist, error) {
	name := base.Redacted()
	p, kind, err := decode(body)
	if err != nil {
		return playlist{}, fmt.Errorf("%s: not a playlist: %v", name, err)
	}
	switch kind {
	case m3u8.MASTER:
		return pickVariant(p.(*m3u8.MasterPlaylist), base, variant, hasVariant)
	case m3u8.MEDIA:
		m, err := mediaSegments(p.(*m3u8.MediaPlaylist), base)
		return playlist{media: m}, err
	}
	return playlist{}, fmt.Errorf("%s: not a playlist", name)
}

// decode runs the parser, and takes a panic of its on input it did not foresee for an error:
// the playlist comes from a server, and a bad one must not end the program.
func decode(body []byte) (p m3u8.Playlist, kind m3u8.ListType, err error) {
	defer func() {
		if e := recover(); e != nil {
			p, kind, err = nil, 0, fmt.Errorf("the parser failed on it (%v)", e)
		}
	}()
	p, kind, err = m3u8.Decode(*bytes.NewBuffer(body), false)
	if err == nil && p == nil {
		err = errors.New("empty")
	}
	return p, kind, err
}

func pickVariant(m *m3u8.MasterPlaylist, base *url.URL, variant int, hasVariant bool) (playlist, error) {
	name := base.Redacted()
	// The streams are the EXT-X-STREAM-INF entries; an I-frame-only playlist is a trick-play
	// index, not a stream to read, and variant=N does not count it.
	var streams []*m3u8.Variant
	for _, v := range m.Variants {
		if v != nil && !v.Iframe {
			streams = append(streams, v)
		}
	}
	if len(streams) == 0 {
		return playlist{}, fmt.Errorf("%s: master playlist without a variant (EXT-X-STREAM-INF)", name)
	}
	pick := -1
	switch {
	case hasVariant:
		if variant >= len(streams) {
			return playlist{}, fmt.Errorf("%s: variant=%d: the master playlist has %d variants, 0 to %d", name, variant, len(streams), len(streams)-1)
		}
		pick = variant
	default:
		for i, v := range streams {
			if strings.TrimSpace(v.URI) != "" && (pick < 0 || v.Bandwidth > streams[pick].Bandwidth) {
				pick = i
			}
		}
		if pick < 0 {
			return playlist{}, fmt.Errorf("%s: master playlist whose variants have no URI", name)
		}
	}
	u, err := resolve(base, streams[pick].URI)
	if err != nil {
		return playlist{}, fmt.Errorf("%s: variant %d: %v", name, pick, err)
	}
	return playlist{variant: u, variants: len(streams)}, nil
}

// mediaSegments lists a media playlist's segments, resolved against base, and refuses one
// whose segments are not clear MPEG-TS.
func mediaSegments(p *m3u8.MediaPlaylist, base *url.URL) (*mediaPlaylist, error) {
	name := base.Redacted()
	m := &mediaPlaylist{live: !p.Closed, target: targetDuration(p.TargetDuration)}
	if p.Map != nil {
		return nil, fmt.Errorf("%s: %w: they are fragmented MP4 (EXT-X-MAP)", name, errRefused)
	}
	segs := p.Segments[:min(int(p.Count()), len(p.Segments))]
	// The parser links an EXT-X-KEY to the next segment only; it holds for every segment
	// after it until the next, as the RFC says (4.3.2.4).
	method := ""
	var durations []float64
	var prev *segment
	for _, s := range segs {
		if s == nil {
			continue
		}
		if s.Key != nil {
			method = s.Key.Method
		}
		if method != "" && !strings.EqualFold(method, "NONE") {
			return nil, fmt.Errorf("%s: %w: they are encrypted (EXT-X-KEY METHOD=%s)", name, errRefused, method)
		}
		if s.Map != nil {
			return nil, fmt.Errorf("%s: %w: they are fragmented MP4 (EXT-X-MAP)", name, errRefused)
		}
		// The sequence numbers are counted here rather than taken from the parser, which
		// numbers from EXT-X-MEDIA-SEQUENCE as it stood when the first segment came.
		seq := p.SeqNo + uint64(len(m.segments))
		if seq < p.SeqNo {
			return nil, fmt.Errorf("%s: EXT-X-MEDIA-SEQUENCE %d overflows", name, p.SeqNo)
		}
		u, err := resolve(base, s.URI)
		if err != nil {
			return nil, fmt.Errorf("%s: segment %d: %v", name, seq, err)
		}
		seg := segment{seq: seq, url: u, length: -1}
		if s.Limit != 0 || s.Offset != 0 {
			if s.Limit <= 0 || s.Offset < 0 || s.Offset > math.MaxInt64-s.Limit {
				return nil, fmt.Errorf("%s: segment %d: bad EXT-X-BYTERANGE %d@%d", name, seq, s.Limit, s.Offset)
			}
			seg.offset, seg.length = s.Offset, s.Limit
			// A range without @offset follows the one before it in the same resource
			// (RFC 8216 4.3.2.2); the parser gives it offset 0.
			if s.Offset == 0 && prev != nil && prev.length >= 0 && prev.url.String() == u.String() && prev.offset <= math.MaxInt64-prev.length-s.Limit {
				seg.offset = prev.offset + prev.length
			}
		}
		m.segments = append(m.segments, seg)
		prev = &m.segments[len(m.segments)-1]
		durations = append(durations, s.Duration)
	}
	if m.live {
		m.start = liveStart(durations, p.TargetDuration)
	}
	return m, nil
}

// liveStart returns the segment to start a live playlist at: the last one that starts at least
// liveEdge target durations before the playlist's end, or the first when none does.
func liveStart(durations []float64, target float64) int {
	if !(target > 0) {
		return 0
	}
	left := 0.0 // the duration from segment i to the end
	for i := len(durations) - 1; i >= 0; i-- {
		if d := durations[i]; d > 0 && !math.IsInf(d, 0) {
			left += d
		}
		if left >= liveEdge*target {
			return i
		}
	}
	return 0
}

// targetDuration bounds a playlist's target duration, in seconds, for timing reloads.
func targetDuration(secs float64) time.Duration {
	if !(secs > 0) { // zero, negative, NaN
		return time.Second
	}
	if secs >= maxTarget.Seconds() {
		return maxTarget
	}
	return max(time.Duration(secs*float64(time.Second)), minTarget)
}

// resolve resolves a URI of a playlist against the playlist's URL; the result must be an
// http:// or https:// URL with a host, the only ones the Reader fetches.
func resolve(base *url.URL, uri string) (*url.URL, error) {
	uri = strings.TrimSpace(uri)
	if uri == "" {
		return nil, errors.New("empty URI")
	}
	ref, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("bad URI: %v", bareError(err))
	}
	u := base.ResolveReference(ref)
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" || u.Host == "" {
		return nil, fmt.Errorf("URI %s is not an http:// or https:// URL", u.Redacted())
	}
	return u, nil
}

// hls fetches the segments of a media playlist.
type hls struct {
	r      *Reader
	u      *url.URL // the media playlist, reloaded when live
	pl     *mediaPlaylist
	loaded time.Time // when the last load of pl began, which the next is timed from
	live   bool      // the playlist was live when first loaded
}

// openHLS reads the playlist of the response Open got and, for a master playlist, the media
// playlist of the variant it picks.
func (r *Reader) openHLS(ctx context.Context, u *url.URL, resp *http.Response, variant int, hasVariant bool) (*hls, error) {
	began := time.Now()
	p, err := r.readPlaylist(resp, u, variant, hasVariant)
	if err != nil {
		return nil, err
	}
	if p.media != nil && hasVariant {
		return nil, fmt.Errorf("%s: variant= picks a variant of a master playlist, and this is a media playlist", r.name)
	}
	if p.variant != nil {
		u = p.variant
		began = time.Now()
		resp, err := r.get(ctx, u, nil)
		if err != nil {
			return nil, err
		}
		if p, err = r.readPlaylist(resp, u, 0, false); err != nil {
			return nil, err
		}
		if p.media == nil {
			return nil, fmt.Errorf("%s: the variant is a master playlist again, where a media playlist was expected", u.Redacted())
		}
	}
	return &hls{r: r, u: u, pl: p.media, loaded: began, live: p.media.live}, nil
}

// readPlaylist reads and parses a playlist response to a request for u. Relative URIs are
// resolved against the URL that answered (after redirects), as a browser does.
func (r *Reader) readPlaylist(resp *http.Response, u *url.URL, variant int, hasVariant bool) (playlist, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPlaylist+1))
	if err != nil {
		return playlist{}, fmt.Errorf("%s: %w", u.Redacted(), bareError(err))
	}
	if len(body) > maxPlaylist {
		return playlist{}, fmt.Errorf("%s: playlist larger than %d MiB", u.Redacted(), maxPlaylist>>20)
	}
	base := u
	if resp.Request != nil && resp.Request.URL != nil {
		base = resp.Request.URL
	}
	return parsePlaylist(body, base, variant, hasVariant)
}

// load fetches the media playlist again.
func (h *hls) load(ctx context.Context) (*mediaPlaylist, error) {
	resp, err := h.r.get(ctx, h.u, nil)
	if err != nil {
		return nil, err
	}
	p, err := h.r.readPlaylist(resp, h.u, 0, false)
	if err != nil {
		return nil, err
	}
	if p.media == nil {
		return nil, fmt.Errorf("%s: the media playlist turned into a master playlist", h.u.Redacted())
	}
	return p.media, nil
}

// run reads the segments in media-sequence order, each once, reloading a live playlist until
// it ends (EXT-X-ENDLIST).
func (h *hls) run(ctx context.Context) error {
	var next uint64 // the media sequence number of the next segment to read
	started := false
	stale := 0
	for {
		pl := h.pl
		fresh := false
		if n := len(pl.segments); n > 0 {
			switch {
			case !started:
				next, started = pl.segments[pl.start].seq, true
			case pl.segments[n-1].seq+1 < next:
				// The playlist ends before what was read: a cache's older copy, or, when it
				// lasts, a sequence that started over.
				if stale++; stale >= staleLoads {
					next, stale = pl.segments[pl.start].seq, 0
				}
			default:
				stale = 0
			}
		}
		for _, s := range pl.segments {
			if !started || s.seq < next {
				continue
			}
			if s.seq > next {
				missed := s.seq - next
				h.r.count(func(st *Stats) { st.SegmentsMissed += int64(missed) })
			}
			fresh = true
			err := h.segment(ctx, s)
			switch {
			case err == nil:
				h.r.count(func(st *Stats) { st.Segments++ })
			case ctx.Err() != nil:
				return ctx.Err()
			case !h.live:
				return err
			default:
				// A live segment that would not come is lost like one that left the
				// playlist; the stream goes on with the next.
				h.r.count(func(st *Stats) { st.SegmentsMissed++ })
			}
			next = s.seq + 1
		}
		if !pl.live {
			return io.EOF
		}
		// RFC 8216 6.3.4: reload after the target duration, or half of it after a load that
		// brought nothing new, counted from when the last load began.
		wait := pl.target
		if !fresh {
			wait /= 2
		}
		if err := sleep(ctx, time.Until(h.loaded.Add(wait))); err != nil {
			return err
		}
		if err := h.reload(ctx); err != nil {
			return err
		}
		h.r.count(func(st *Stats) { st.PlaylistReloads++ })
	}
}

// reload loads the playlist again, retrying with backoff for as long as the Reader's
// GiveUpAfter allows; a playlist refused (encrypted, fMP4) is not retried.
func (h *hls) reload(ctx context.Context) error {
	var failing time.Time
	for i := 0; ; i++ {
		began := time.Now()
		pl, err := h.load(ctx)
		if err == nil {
			h.pl, h.loaded = pl, began
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, errRefused) {
			return err
		}
		if failing.IsZero() {
			failing = began
		}
		if time.Since(failing) >= h.r.giveUp {
			return fmt.Errorf("%v; the playlist could not be loaded for %v, gave up", err, time.Since(failing).Round(time.Millisecond))
		}
		if err := sleep(ctx, backoff(i)); err != nil {
			return err
		}
	}
}

// segment reads one segment, passing its bytes on as they come. A download that fails is tried
// again, segmentRetries times, from the byte where it stopped, so that no byte is passed on
// twice.
func (h *hls) segment(ctx context.Context, s segment) error {
	var got int64
	var err error
	for try := 0; try <= segmentRetries; try++ {
		if try > 0 {
			if err := sleep(ctx, backoff(try-1)); err != nil {
				return err
			}
		}
		var n int64
		n, err = h.fetch(ctx, s, got)
		got += n
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("%v (tried %d times)", err, segmentRetries+1)
}

// fetch reads segment s from byte got on, and returns how many bytes it passed on.
func (h *hls) fetch(ctx context.Context, s segment, got int64) (int64, error) {
	start := s.offset + got
	length := int64(-1)
	if s.length >= 0 {
		length = s.length - got
		if length == 0 {
			return 0, nil
		}
	}
	// The segment's connection has a context of its own, for its stall watch to end.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := h.r.get(cctx, s.url, func(req *http.Request) {
		if start > 0 || length >= 0 {
			rng := "bytes=" + strconv.FormatInt(start, 10) + "-"
			if length >= 0 {
				rng += strconv.FormatInt(start+length-1, 10)
			}
			req.Header.Set("Range", rng)
		}
	})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	w := h.r.watch(cancel)
	defer w.stop()
	var body io.Reader = &watchedBody{ReadCloser: resp.Body, w: w}
	if resp.StatusCode != http.StatusPartialContent && start > 0 {
		// The server ignored the range and sends the whole resource: skip to the start.
		if _, err := io.CopyN(io.Discard, body, start); err != nil {
			return 0, h.fetchError(s, w, err)
		}
	}
	if length >= 0 {
		body = io.LimitReader(body, length)
	}
	n, err := h.r.copyBody(ctx, body)
	if err == io.EOF {
		if length >= 0 && n < length {
			return n, fmt.Errorf("%s: segment ended after %d of %d bytes", s.url.Redacted(), got+n, s.length)
		}
		return n, nil
	}
	if ctx.Err() != nil {
		return n, ctx.Err()
	}
	return n, h.fetchError(s, w, err)
}

// fetchError is the error of a segment's download that failed with err: a stall, counted, if
// its watch dropped the connection.
func (h *hls) fetchError(s segment, w *stallWatch, err error) error {
	if w.fired.Load() {
		h.r.count(func(st *Stats) { st.Stalls++ })
		return fmt.Errorf("%s: no byte for %v with the connection open", s.url.Redacted(), w.limit)
	}
	return fmt.Errorf("%s: %w", s.url.Redacted(), bareError(err))
}
