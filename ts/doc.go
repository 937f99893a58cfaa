// Package ts is the MPEG transport stream packet library the rest of tsdescramble builds on:
// packet framings (188, 192 and 204 bytes) and a framer that regains sync after garbage,
// accessors over the header and adaptation field of a packet held as a plain []byte, the
// PES-header check that tells a right key from a wrong one (ISO/IEC 13818-1), the program
// clock reference with the one clock that every part telling time by the stream follows
// (PCRClock, with one rule for a jump: MaxPCRStep), and Source, the one reader of a stream's
// packets: it frames the input, reads a live input ahead in a goroutine of its own (ReadAhead)
// so that the packets that have come can be handed out by a deadline (ErrPending) while the
// input is quiet, says when each packet arrived, replays a look-ahead (Peek) and runs a Stage
// between the framer and its reader.
//
// Nothing is parsed that is not read and nothing is allocated per packet: the accessors are
// small functions over the packet's bytes, cheap enough to call for every packet of a stream.
package ts
