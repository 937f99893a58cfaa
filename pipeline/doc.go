// Package pipeline descrambles, scrambles and rescrambles MPEG transport streams: Run takes the
// packets of a ts.Source, runs the ciphers on every core and writes every packet, in input
// order and framing, to an io.Writer.
//
// # Stages
//
// A packet passes these stages, in this order (DESIGN.md has the whole run, the input's
// side included):
//
//	io.Reader ─► ts.Source ──────────► classifier ─────────► workers ─────────► ordered writer ─► io.Writer
//	             read-ahead (live),     (one goroutine:       (Workers           (chunks back in
//	             framer, look-ahead     PID, TSC, payload;    goroutines:        sequence; flushed
//	             replay, stage          tables; crypto        batcher,           when caught up
//	             (scs), end; when       period and key:       ciphers)           on a bound)
//	             each unit arrived      keys/period)
//
// The source frames the input (188, 192 or 204 bytes, resynchronising after garbage), replays
// what a look-ahead read, and runs the stage that a SimulCrypt scrambler puts between the
// framer and the run (package scs); it says when each unit arrived, which the latency bound
// counts from. One goroutine takes its units into chunks (units of work of Options.Batch
// packets), the only copy of a unit's bytes the run makes, and classifies each one: its PID, its
// scrambling control, its payload, and, to descramble, its PID's crypto period. Workers take
// whole chunks; package batcher cuts each chunk's payloads into batches of one key and the
// system's width (scrambling.System.Lanes), one processor call each, and an ordered writer puts
// the chunks back in sequence. Memory is bounded by the chunks in flight, and those within
// MaxMemory, whatever Workers and Batch ask for (see Limits).
//
// # The tables
//
// A run reads the PAT and PMTs once, into the classifier's psi.Tracker, fed each packet of
// the PIDs it reads before anything else looks at the packet. Everything in the run that needs
// the tables asks that one view: the selection of -service's PIDs, the crypto-period tracker
// (what each PID carries, which PIDs are one service's), the sections a key server wants and
// the services it is told of, the scrambling_descriptor written into PMTs (signal.go), and the
// services and carriage of each PID that Stats reports.
//
// # Crypto periods and keys
//
// Which control word descrambles each packet is decided by package keys/period, whose
// Tracker follows each PID's crypto periods in stream order: the classifier gives it each
// scrambled packet's PID and parity and the payloads that start a PES packet or a section, and
// applies its decisions; its package doc has the rules, case by case.
//
// Until its period is decided, a chunk is held by the reading goroutine, and the chunks after
// it with it; the pool of chunks grows to hold them, up to period.HoldPackets packets after the
// first packet of the oldest undecided period, where that period is decided with what is known.
// A decision depends only on the packets in stream order, so the output is the same for every
// Batch, Workers and lane width, and however the input's reads are cut (FuzzBatchInvariance
// holds the package to it). In an audio or video stream a decision comes within a few packets
// (the next PES start), so holding costs nothing measurable.
//
// # Keys that arrive while the stream runs
//
// With Options.LiveKeys, the crypto periods take their control words from the key slots of a
// keys.Source (a key server's answers, a CW log that grows), as package keys/period decides:
// a period whose key has not come is held until it does, or until LiveKeys.Wait. The sections of the PIDs the key
// server wants (ECMs, EMMs) go to LiveKeys.Sections, with the services of the PAT and PMTs
// (livekeys.go). A source whose CWs may each be for a system of their own (keys.SystemSource:
// a DVBAPI server sets a mode per key slot, DES or AES-128, ECB or CBC) has each period
// descrambled with its CW's system: a unit of work whose keys are of several systems is batched
// per system, to its width and shortest payload, on a processor of that system in each
// worker; one whose keys are all the input system's takes the path of a key list.
//
// # Live input: the latency bound
//
// With Options.Latency, the source reads its input in a goroutine of its own and the run takes
// its packets with a deadline: when its oldest packet held is due. The unit of work is then cut, however few
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
