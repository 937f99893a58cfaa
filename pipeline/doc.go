// Package pipeline descrambles, scrambles and rescrambles MPEG transport streams: Run reads
// packets from an io.Reader, runs the ciphers on every core and writes every packet, in input
// order and framing, to an io.Writer.
//
// # Stages
//
//	io.Reader ──► reader, classifier ──► workers ──► ordered writer ──► io.Writer
//	              (one goroutine:        (Workers    (chunks back
//	              framer, PID, TSC,      goroutines: in sequence)
//	              payload, crypto        batcher,
//	              period and key)        ciphers)
//
// One goroutine reads the input into chunks (units of work of Options.Batch packets), frames
// the packets (188, 192 or 204 bytes, resynchronising after garbage) and classifies each one:
// its PID, its scrambling control, its payload, and, to descramble, its PID's crypto period.
// Workers take whole chunks; package batcher cuts each chunk's payloads into batches of one
// key and the system's width (scrambling.System.Lanes), one processor call each, and an
// ordered writer puts the chunks back in sequence. Memory is bounded by the chunks in flight,
// and those within MaxMemory, whatever Workers and Batch ask for (see Limits).
//
// # Crypto periods and keys
//
// Key decisions are made per PID, because a multiplex may carry services of several CA
// systems, each changing keys on its own clock: the parity changes of one PID start that PID's
// crypto periods and say nothing of another's. For each period the classifier decides once
// which control word of the key schedule applies, and the decision covers every packet of the
// period, whichever chunk it is in:
//
//   - A period's first unit start that can be checked (a PES header; a section whose CRC_32
//     lies in the packet, on a PID the PMT says carries sections) is descrambled with the
//     expected key, and, if that does not fit, with the others, nearest first in the schedule;
//     only the first bytes are descrambled for each trial. A key that fits decides the period
//     and the PID's schedule goes on from it; up to four unit starts are tried.
//   - A period whose checked unit starts fit no key is left as it came: its packets pass
//     through untouched, still marked scrambled. A PID that never fits, after enough checks,
//     is taken for another CA system's and is not tried again.
//   - A period without any checkable unit start (T2-MI, sections that span packets, a period
//     cut short) takes the schedule's expected key.
//   - A parity change that lasts a single packet, inside a period of two packets or more, is
//     a glitch: that packet is left as it came and the period goes on.
//
// Until its period is decided, a chunk is held by the reading goroutine, and the chunks after
// it with it; the pool of chunks grows to hold them, up to 65536 packets after the first packet
// of the oldest undecided period, where that period is decided with what is known. A decision
// depends only on the packets in stream order, so the output is the same for every Batch,
// Workers and lane width, and however the input's reads are cut (FuzzBatchInvariance holds the
// package to it). In an audio or video stream a decision comes within a few packets (the next
// PES start), so holding costs nothing measurable.
//
// # Keys that arrive while the stream runs
//
// With Options.LiveKeys, each PID's crypto periods take their control word from a keys.Source
// (a key server's answers, a CW log that grows) at their first packet: the CW the key slot
// holds for the period's parity, a constant one as well as one that changed. A period whose
// key has not come is held until it does, or until LiveKeys.Wait, after which its packets pass
// as they came (or are dropped); on a live input it waits so even when its PID's next period
// has begun. Keys are not searched, the server says which key applies, but each is checked
// before it is used, as a key list's expected key is: it must fit the period's first checkable
// unit start, and one that does not (the previous period's key, not replaced yet) is not used,
// the period waiting for the next. The sections of the PIDs the key server wants (ECMs, EMMs)
// go to LiveKeys.Sections, with the services of the PAT and PMTs. See livekeys.go.
//
// # Live input: the latency bound
//
// With Options.Latency, a run reads its input in a goroutine of its own and takes it with a
// deadline: when its oldest packet held is due. The unit of work is then cut, however few
// packets it holds, and the output is flushed when the writer has caught up; that changes no
// byte of the output. With Options.DecideOnTime (for a live input), the crypto periods still
// open in the units due are decided with what is known too, as at the 65536-packet bound: such
// a decision depends on time as well as on the packets, since a period whose first checkable
// unit start comes after the bound takes the schedule's expected key unchecked. Without it,
// packets of an undecided period wait for the stream to decide it, as in a file. A regular file
// needs no bound.
//
// # Statistics
//
// Stats counts packets by what happened to them, per PID and in all, crypto periods fitted,
// unchecked and left scrambled, and the unit-start checks the workers make after descrambling.
package pipeline
