package ts

// Stage is a step that works on the packets of a Source between its framer and its reader (see
// Source.SetStage): a SimulCrypt scrambler that adds ECMs and signals them in the PMTs, say.
// It is handed every unit the framer yields, in stream order, and says which units go on in
// its place: the same unit, changed in place or not, units of its own before or after it, or
// none yet while it holds units back (until the next PCR dates them, say).
type Stage interface {
	// Packet takes the next unit of the input, of framing fr, and appends to out the units
	// that go on now, in order. unit is valid only during the call. An error ends the stream
	// after the units appended: the Source hands them on, then returns the error.
	Packet(unit []byte, fr Framing, out *Units) error
	// End is called once, at the end of the input (or when the Source is ended): the stage
	// appends the units it still holds.
	End(out *Units) error
}

// Units is a run of packet units in stream order, in one buffer: what a Stage hands on. A
// unit's framing is told by its size (188, 192 or 204 bytes).
type Units struct {
	buf  []byte
	ends []int // where each unit ends in buf
	next int   // the first unit not yet taken
	// added holds the indexes of the units AppendAdded added, in order, and nextAdded the
	// first of them not yet taken.
	added     []int
	nextAdded int
}

// Append adds a copy of unit.
func (u *Units) Append(unit []byte) {
	u.buf = append(u.buf, unit...)
	u.ends = append(u.ends, len(u.buf))
}

// AppendAdded adds a copy of unit, a unit of the stage's own that stands for no unit of the
// input (an ECM packet inserted between the input's; one in the place of a null packet stands
// for that packet, and is appended with Append): Source.Added counts it as Next returns it.
func (u *Units) AppendAdded(unit []byte) {
	u.added = append(u.added, len(u.ends))
	u.Append(unit)
}

// Len returns the number of units not yet taken.
func (u *Units) Len() int { return len(u.ends) - u.next }

// Bytes returns the number of bytes of the units not yet taken.
func (u *Units) Bytes() int {
	if u.next == len(u.ends) {
		return 0
	}
	return len(u.buf) - u.start(u.next)
}

// Take returns the next unit, valid until u next changes, or false when none is left (u then reuses its memory).
func (u *Units) Take() ([]byte, bool) {
	if u.Len() == 0 {
		u.reset()
		return nil, false
	}
	return u.take(), true
}

// start returns where unit i begins in buf.
func (u *Units) start(i int) int {
	if i == 0 {
		return 0
	}
	return u.ends[i-1]
}

// take returns the next unit, valid until the next call that changes u.
func (u *Units) take() []byte {
	unit, _ := u.takeUnit()
	return unit
}

// takeUnit returns the next unit, valid until the next call that changes u, and whether
// AppendAdded added it.
func (u *Units) takeUnit() (unit []byte, added bool) {
	i := u.next
	u.next++
	if u.nextAdded < len(u.added) && u.added[u.nextAdded] == i {
		u.nextAdded++
		added = true
	}
	return u.buf[u.start(i):u.ends[i]], added
}

// reset empties u, keeping its memory, once every unit is taken.
func (u *Units) reset() {
	u.buf, u.ends, u.next = u.buf[:0], u.ends[:0], 0
	u.added, u.nextAdded = u.added[:0], 0
}

// FramingOf returns the framing of a unit of size bytes, and whether there is one.
func FramingOf(size int) (Framing, bool) {
	for _, f := range framings {
		if f.Size == size {
			return f, true
		}
	}
	return Framing{}, false
}
