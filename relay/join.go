package relay

import "github.com/tsdescramble/tsdescramble/ts"

// framings are the unit layouts a join looks for, in the order they are tried.
var framings = [...]ts.Framing{ts.Framing188, ts.Framing192, ts.Framing204}

// joinAt returns the offset in p of the first unit whose packet starts a PAT (PID 0 with
// payload_unit_start_indicator set), or -1 when p holds none or its framing is not clear. It is
// called only while a client waits to join, so a stream with no one joining is not parsed.
func (s *Server) joinAt(p []byte) int {
	f, ok := s.framingOf(p)
	if !ok {
		return -1
	}
	for off := f.Prefix; off < len(p); off += f.Size {
		pkt := p[off : off+ts.PacketSize]
		if ts.PID(pkt) == 0 && ts.PUSI(pkt) {
			return off - f.Prefix
		}
	}
	return -1
}

// framingOf returns the framing of the units in p: the one found last if it fits, else the one
// framing that does. The writer is not asked for it, since its output may take the input's
// framing; and a framing that fits p by chance besides the real one (a sync byte where another
// size expects it, in every unit) leaves the join for the next Write rather than guess.
func (s *Server) framingOf(p []byte) (ts.Framing, bool) {
	if fits(p, s.framing) {
		return s.framing, true
	}
	var found ts.Framing
	n := 0
	for _, f := range framings {
		if fits(p, f) {
			found = f
			n++
		}
	}
	if n != 1 {
		return ts.Framing{}, false
	}
	s.framing = found
	return found, true
}

// fits reports whether p is whole units of f, each with the sync byte where f puts it.
func fits(p []byte, f ts.Framing) bool {
	if f.Size == 0 || len(p) == 0 || len(p)%f.Size != 0 {
		return false
	}
	for off := f.Prefix; off < len(p); off += f.Size {
		if p[off] != ts.SyncByte {
			return false
		}
	}
	return true
}
