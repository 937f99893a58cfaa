package relay

import (
	"testing"

	"github.com/tsdescramble/tsdescramble/ts"
)

// packetUnit returns a unit of framing f holding a packet of pid, with or without a unit start.
func packetUnit(f ts.Framing, pid uint16, start bool) []byte {
	u := make([]byte, f.Size)
	p := u[f.Prefix:]
	p[0], p[1], p[2], p[3] = ts.SyncByte, byte(pid>>8), byte(pid), 0x10
	if start {
		p[1] |= 0x40
	}
	return u
}

func cat(us ...[]byte) []byte {
	var b []byte
	for _, u := range us {
		b = append(b, u...)
	}
	return b
}

// joinAt finds the first PAT start in each framing and nothing in bytes that are not whole
// units of one framing.
func TestJoinAt(t *testing.T) {
	for _, f := range framings {
		pat := packetUnit(f, 0, true)
		pat0 := packetUnit(f, 0, false)
		pes := packetUnit(f, 0x100, true)
		for _, c := range []struct {
			name string
			p    []byte
			want int
		}{
			{"pat first", cat(pat, pes), 0},
			{"pat third", cat(pes, pat0, pat, pat), 2 * f.Size},
			{"pat alone", pat, 0},
			{"no unit start on PID 0", cat(pat0, pes, pat0), -1},
			{"a unit cut short", cat(pes, pat)[:2*f.Size-1], -1},
			{"no sync", cat(pes, make([]byte, f.Size), pat), -1},
			{"empty", nil, -1},
		} {
			t.Run("framing="+f.String()+"/"+c.name, func(t *testing.T) {
				var s Server
				if got := s.joinAt(c.p); got != c.want {
					t.Errorf("joinAt = %d, want %d", got, c.want)
				}
			})
		}
	}
}

// A framing found once is kept while it fits, and a write that two framings fit leaves the
// join to a later one rather than guess.
func TestFramingOf(t *testing.T) {
	var s Server
	// 51 units of 188 bytes are 47 of 204; with a sync byte every 188 and every 204 bytes, both fit.
	both := make([]byte, 51*188)
	for off := 0; off < len(both); off += 188 {
		both[off] = ts.SyncByte
	}
	for off := 0; off < len(both); off += 204 {
		both[off] = ts.SyncByte
	}
	if f, ok := s.framingOf(both); ok {
		t.Fatalf("framing %v found in bytes that two framings fit", f)
	}
	if f, ok := s.framingOf(packetUnit(ts.Framing204, 0, true)); !ok || f != ts.Framing204 {
		t.Fatalf("framing %v, %v; want 204", f, ok)
	}
	if f, ok := s.framingOf(both); !ok || f != ts.Framing204 {
		t.Fatalf("framing %v, %v after 204 was found; want 204", f, ok)
	}
}
