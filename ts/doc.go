// Package ts is the MPEG transport stream packet library the rest of tsdescramble builds on:
// packet framings (188, 192 and 204 bytes) and a framer that regains sync after garbage,
// accessors over the header and adaptation field of a packet held as a plain []byte, the
// PES-header check that tells a right key from a wrong one (ISO/IEC 13818-1), the program
// clock reference with the one clock that every part telling time by the stream follows
// (PCRClock, with one rule for a jump: MaxPCRStep), and ReadAhead, which reads a live input in
// a goroutine of its own so that the packets that have come can be handed out by a deadline
// (ErrPending) while the input is quiet.
//
// Nothing is parsed that is not read and nothing is allocated per packet: the accessors are
// small functions over the packet's bytes, cheap enough to call for every packet of a stream.
package ts
