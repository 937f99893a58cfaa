package web

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
)

const master = `#EXTM3U
#EXT-X-STREAM-INF:BANDWIDTH=500000
low/index.m3u8
#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=9000000,URI="iframes.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=2000000,RESOLUTION=1280x720
http://other.example/high.m3u8?token=a%2Fb
#EXT-X-STREAM-INF:BANDWIDTH=2000000
tie.m3u8
`

func TestParsePlaylist(t *testing.T) {
	base, _ := url.Parse("http://u:p@cdn.example/live/x/master.m3u8?sig=1")
	for _, tc := range []struct {
		name, body string
		variant    int
		hasVariant bool
		want       string   // the variant picked, or
		segs       []string // the segments: "seq url offset+length"
		live       bool
		start      int
		err        string
	}{
		{name: "master/highest", body: master, want: "http://other.example/high.m3u8?token=a%2Fb"},
		{name: "master/variant=0", body: master, hasVariant: true, want: "http://u:p@cdn.example/live/x/low/index.m3u8"},
		{name: "master/variant=2", body: master, hasVariant: true, variant: 2, want: "http://u:p@cdn.example/live/x/tie.m3u8"},
		{name: "master/variant=3", body: master, hasVariant: true, variant: 3, err: "has 3 variants, 0 to 2"},
		{name: "master/none", body: "#EXTM3U\n#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI=\"i.m3u8\"\n", err: "without a variant"},
		{
			name: "vod",
			body: "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:4,\na.ts\n#EXTINF:4,\n/abs/b.ts\n#EXTINF:4,\nhttps://h2/c.ts\n#EXT-X-ENDLIST\n",
			segs: []string{"7 http://u:p@cdn.example/live/x/a.ts 0+-1", "8 http://u:p@cdn.example/abs/b.ts 0+-1", "9 https://h2/c.ts 0+-1"},
		},
		{
			name: "live/starts 3 target durations from the end",
			body: "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:100\n" + strings.Repeat("#EXTINF:2,\ns.ts\n", 6),
			live: true, start: 3,
			segs: []string{"100", "101", "102", "103", "104", "105"},
		},
		{
			name: "byteranges",
			body: "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-BYTERANGE:1000@376\n#EXTINF:1,\nall.ts\n#EXT-X-BYTERANGE:500\n#EXTINF:1,\nall.ts\n#EXT-X-ENDLIST\n",
			segs: []string{"0 http://u:p@cdn.example/live/x/all.ts 376+1000", "1 http://u:p@cdn.example/live/x/all.ts 1376+500"},
		},
		{
			name: "key then none",
			body: "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-KEY:METHOD=NONE\n#EXTINF:1,\na.ts\n#EXT-X-ENDLIST\n",
			segs: []string{"0"},
		},
		{
			name: "encrypted later",
			body: "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\na.ts\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k\"\n#EXTINF:1,\nb.ts\n#EXT-X-ENDLIST\n",
			err:  "encrypted (EXT-X-KEY METHOD=SAMPLE-AES)",
		},
		{
			name: "fmp4",
			body: "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:1,\na.m4s\n#EXT-X-ENDLIST\n",
			err:  "fragmented MP4 (EXT-X-MAP)",
		},
		{
			name: "file URI",
			body: "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n",
			err:  "not an http:// or https:// URL",
		},
		{name: "not a playlist", body: "G\x00\x11garbage", err: "not a playlist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parsePlaylist([]byte(tc.body), base, tc.variant, tc.hasVariant)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %q", err, tc.err)
				}
				if strings.Contains(err.Error(), ":p@") {
					t.Errorf("error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" {
				if p.variant == nil || p.variant.String() != tc.want {
					t.Fatalf("picked %v, want %s", p.variant, tc.want)
				}
				return
			}
			m := p.media
			if m == nil || m.live != tc.live || m.start != tc.start || len(m.segments) != len(tc.segs) {
				t.Fatalf("got %+v, want live=%v start=%d and %d segments", m, tc.live, tc.start, len(tc.segs))
			}
			for i, s := range m.segments {
				got := s.String()
				if !strings.Contains(tc.segs[i], " ") {
					got = strings.Fields(got)[0]
				}
				if got != tc.segs[i] {
					t.Errorf("segment %d: %s, want %s", i, got, tc.segs[i])
				}
			}
		})
	}
}

func (s segment) String() string {
	return fmt.Sprintf("%d %s %d+%d", s.seq, s.url, s.offset, s.length)
}

// FuzzPlaylist feeds any bytes to the playlist handling (the parser, the variant choice, the
// segment list): it never panics, every URL it gives is absolute and http or https, sequence
// numbers are consecutive, the live start is a segment of the playlist, byte ranges are
// sane, and a refused playlist says why.
func FuzzPlaylist(f *testing.F) {
	f.Add([]byte(master), 0, false)
	f.Add([]byte(master), 1, true)
	f.Add([]byte("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:18446744073709551615\n#EXTINF:1,\na.ts\n#EXTINF:1,\nb.ts\n"), 0, false)
	f.Add([]byte("#EXTM3U\n#EXT-X-KEY:METHOD=AES-128\n#EXT-X-BYTERANGE:10\n#EXTINF:nan,\n\n#EXTINF:1,\n//h/x.ts\n"), 0, false)
	f.Add([]byte("#EXTM3U\n#EXT-X-BYTERANGE:9223372036854775807@9223372036854775807\n#EXTINF:1,\na\n#EXT-X-BYTERANGE:5\n#EXTINF:1,\na\n"), 0, false)
	f.Add([]byte("#EXT-X-STREAM-INF:BANDWIDTH=1\n\n#EXT-X-MAP:URI=x\n"), 3, true)
	base, _ := url.Parse("https://user:pw@h.example/a/b.m3u8?x=1")
	f.Fuzz(func(t *testing.T, body []byte, variant int, hasVariant bool) {
		if variant < 0 {
			variant = -variant
		}
		p, err := parsePlaylist(body, base, variant, hasVariant)
		if err != nil {
			if !strings.HasPrefix(err.Error(), base.Redacted()+": ") {
				t.Fatalf("error does not start with the redacted URL: %v", err)
			}
			return
		}
		abs := func(u *url.URL) {
			if u == nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || !u.IsAbs() {
				t.Fatalf("URL %v is not absolute http(s) with a host", u)
			}
		}
		switch {
		case p.variant != nil:
			abs(p.variant)
			if p.media != nil || hasVariant && variant >= p.variants {
				t.Fatalf("master playlist result %+v for variant %d", p, variant)
			}
		case p.media != nil:
			m := p.media
			if m.target < minTarget || m.target > maxTarget {
				t.Fatalf("target duration %v out of bounds", m.target)
			}
			if len(m.segments) > 0 && (m.start < 0 || m.start >= len(m.segments)) || len(m.segments) == 0 && m.start != 0 {
				t.Fatalf("start %d of %d segments", m.start, len(m.segments))
			}
			if !m.live && m.start != 0 {
				t.Fatalf("a VOD playlist starts at %d", m.start)
			}
			for i, s := range m.segments {
				abs(s.url)
				if i > 0 && s.seq != m.segments[i-1].seq+1 {
					t.Fatalf("segment %d has sequence %d after %d", i, s.seq, m.segments[i-1].seq)
				}
				if s.length < -1 || s.offset < 0 || s.length >= 0 && s.offset > math.MaxInt64-s.length {
					t.Fatalf("segment %d has range %d@%d", i, s.length, s.offset)
				}
			}
		default:
			t.Fatal("neither a variant nor a media playlist, and no error")
		}
	})
}
