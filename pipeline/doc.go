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
// crypto periods and say nothing of another's. The PIDs of one service (one PMT) change keys
// together, so what one of them shows places the others' periods. For each period the
// classifier (periods.go) decides once which control word applies, or that its packets pass as
// they came, and the decision covers every packet of the period, whichever chunk it is in. A
// key is used only where evidence places it:
//
//	case                                          decision                                   test
//	a unit start fits the expected key            the period has it (fit, "checked")         TestRunDescrambles
//	it fits another key of the list               the list is realigned there (key sync)     TestFailedCheckEndsDecision
//	its unit starts fit no key                    left as it came (no fit, exit 3)           TestPeriodsNoKeyFits
//	a PID no key ever fits                        another CA system's: left, named           TestMixedCAS
//	a unit start fails its decided period's key   a period of the same parity begins there   TestFailedCheckEndsDecision
//	counters break after following on             a period begins at the break, checked      TestFailedCheckEndsDecision
//	nothing to check, list followed in order      the list's next key ("unchecked")          TestSectionsAndT2MI
//	nothing to check, a sibling's key fitted      the sibling's key, same service period     TestOracleRandomSchedules
//	nothing to check, nothing places it           left as it came, counted ("unplaced")      FuzzOracleSchedules
//	silent while its siblings began periods       as many ring positions on as they began    TestSilentPIDTakesItsSiblingsPeriods
//	silent, unwatched, for over half a period     a period begins, placed as above           TestOracleRandomSchedules
//	one packet of the other parity                a glitch, left as it came                  TestParityGlitch
//	... that its siblings share, or that fits     a period (a sparse PID)                    TestSparsePIDIsNotAGlitch
//	a PID no PMT has described yet                its unit starts wait for the PMT (hold)    TestBeforeTheTables
//	a key server's slot CW fits                   the period has it, used before or not      TestLiveKeysConstantCWs
//	a slot CW that does not fit                   the period waits for the next of its parity TestLiveKeysStaleKeyAfterMissingPeriod
//	no key within -key-wait, in all               passed as it came (or dropped)             TestLiveKeysServerStops
//
// More precisely:
//
//   - A period's first unit start that can be checked (a PES header; a section whose CRC_32
//     lies in the packet, on a PID the PMT says carries sections) is descrambled with the
//     expected key (a sibling's, where one fitted in the same service period, else the list's
//     order) and, if that does not fit, with the others, nearest first in the schedule; only
//     the first bytes are descrambled for each trial. A key that fits decides the period and
//     the PID's schedule goes on from it; up to four unit starts are tried.
//   - A later unit start of a decided period is tried with its key too: one that does not fit
//     ends the decision there (the packets before keep their key).
//   - A period whose checked unit starts fit no key is left as it came: its packets pass
//     through untouched, still marked scrambled. A PID that never fits, after enough checks,
//     is taken for another CA system's and is not tried again.
//   - A period that may have begun unseen (after a silence longer than half the shortest
//     crypto period seen, or than lagLimit and eight times what the PID showed of its period,
//     with no sibling watching; a PID's first period late in the stream) takes a key only from
//     a unit start or a sibling. Without either its packets are left as they came (unplaced),
//     which says nothing against the keys.
//   - A parity change that lasts a single packet, inside a period of two packets or more, is
//     a glitch: that packet is left as it came and the period goes on, unless the PID's
//     siblings changed periods meanwhile or its unit start fits a key.
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
