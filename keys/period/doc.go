// Package period decides which control word applies to each scrambled packet of a transport
// stream: it follows every PID's crypto periods, in stream order, and gives each period one
// decision, a key or that its packets pass as they came. It is the one owner of that decision,
// over a key list or schedule (with its order, and a search where the order fails), and over
// keys that arrive while the stream runs (a key server, a CW log that grows). A caller (package
// pipeline) gives it each scrambled packet's PID and parity (Tracker.Packet) and the payloads
// that start a unit (Tracker.UnitStart), holds the packets of periods still open, and asks
// (Tracker.Decision) once they are decided.
//
// # Rules
//
// Key decisions are made per PID, because a multiplex may carry services of several CA
// systems, each changing keys on its own clock: the parity changes of one PID start that PID's
// crypto periods and say nothing of another's. The PIDs of one service (one PMT) change keys
// together, so what one of them shows places the others' periods. For each period the
// Tracker decides once which control word applies, or that its packets pass as
// they came, and the decision covers every packet of the period, wherever the caller cut the stream. A
// key is used only where evidence places it:
//
//	case                                         decision                                     test
//	a unit start fits the expected key           the period has it (fit, "checked")           TestUnitStartFitsExpectedKey
//	it fits another key of the list              the list is realigned there (key sync)       TestUnitStartFitsAnotherKeyRealigns
//	its unit starts fit no key                   left as it came (no fit)                     TestUnitStartsFitNoKey
//	a PID no key ever fits                       another CA system's: left, named             pipeline: TestMixedCAS
//	a unit start fails its decided period's key  a period of the same parity begins there     TestFailedCheckBeginsAPeriod
//	counters break after following on            a period begins at the break, checked        TestCounterBreakBeginsAPeriod
//	... packets lost, before or after a period   the service unseen there: nothing its PIDs showed before places what
//	                                             comes after (siblings' keys, the next period's key, a key seen on
//	                                             both parities, a one-packet excursion folded back)
//	                                                                                          pipeline: TestPacketLossLeavesOrClears
//	a loss the counters hide (a multiple of 16 packets), the key changed in it
//	                                             shows at the PID's next unit start, which fails the key: counted
//	                                             (Counts.UnseenChanges); the packets between went out with the key before
//	                                                                                          pipeline: TestPacketLossLeavesOrClears
//	nothing to check, list followed in order     the list's next key ("unchecked")            TestNothingToCheckTakesTheListsNextKey
//	nothing to check, a sibling's key fitted     the sibling's key, same service period       TestSiblingPlacesAPeriodWithNothingToCheck
//	nothing to check, nothing places it          left as it came, counted ("unplaced")        TestCounterBreakBeginsAPeriod
//	nothing to check, after a period nothing placed  left as it came: the list's order from there is a guess
//	                                                                                          TestPeriodAfterAnUnplacedOneIsUnplaced
//	silent while its siblings began periods      as many ring positions on as they began      TestSilentPIDTakesItsSiblingsPeriods
//	silent, unwatched, for over half a period    a period begins, placed as above             streamtest: TestOracleRandomSchedules
//	silent for less than half a period          the same period, when its next start fits    streamtest: TestOracleRandomSchedules (1240)
//	split off by a silence, its next start fitting: the same period if its service (its siblings too) was silent for less
//	than half the service's own shortest period seen whole (or than half the longest one of its periods
//	lasted at most, a PID's changes of parity and the silences before them say, if shorter), and no
//	sibling showed the other parity                                                           streamtest: TestOracleRandomSchedules (5490)
//	                                             waits (held) until a period is seen whole, and before the tables until
//	                                             they name its siblings; at the hold's end or the stream's, as if it has none
//	                                                                                          TestSilenceBeforeAnyPeriodSeenWaitsForOne
//	its siblings could not follow the list       nothing to check: left as it came            streamtest: TestOracleRandomSchedules (1240)
//	a first period the list start alone places  left, if another first period fitted elsewhere streamtest: TestOracleRandomSchedules (1059)
//	one packet of the other parity               a glitch, left as it came                    TestOnePacketOfTheOtherParityIsAGlitch
//	... that its siblings share, or that fits    a period (a sparse PID)                      pipeline: TestSparsePIDIsNotAGlitch
//	... with long silences around it, unwatched  a glitch; the period after it waits to be placed  streamtest: TestOracleRandomSchedules (1401)
//	... that a sibling changed to after it       a period, and the PID's next packet the next  TestOnePacketChangeASiblingSharesIsAPeriod
//	a period's first unit start fits the key as many periods on as its siblings began since its
//	first packet, not its own                    a later period begins there; the packets before keep theirs
//	                                             TestUnitStartAfterASiblingsChangesBeginsALaterPeriod
//	split off by a short silence, its siblings changed in it
//	                                             not the same period, whatever the shortest seen   streamtest: TestOracleRandomSchedules (1998)
//	a PID's first packet more than lagLimit into the stream, nothing to check
//	                                             left as it came: the first CW may be an earlier period's  streamtest: TestOracleRandomSchedules (2333)
//	a PID back after its whole service was silent  a service period of its own, its key placing it  streamtest: TestOracleRandomSchedules (1449)
//	a PID back in the parity a sibling began the service's period with, sooner than half a period
//	                                             in that period: a sibling's key places it    TestPIDJoiningItsSiblingsPeriodIsPlaced
//	a PID no PMT has described yet               its unit starts wait for the PMT (hold)      TestUndescribedPIDWaitsForItsPMT
//	back in the other parity after a silence longer than its period seen, no period seen whole
//	                                             a period its unit start or a sibling places  streamtest: TestOracleRandomSchedules (2435)
//	a unit start after a watched silence, in a fitted period
//	                                             checked with the period's key all the same   streamtest: TestOracleRandomSchedules (1987)
//	a first period of a PID of another service than the PID that fitted first
//	                                             not placed by the list's start (two lists in one file)  streamtest: TestOracleRandomSchedules (1946)
//	a PMT that comes before the first PAT        read when the PAT names its PID              psi: TestTracker
//	a key server's slot CW fits                  the period has it, used before or not        TestLiveSlotCWFitsWhetherUsedBeforeOrNot
//	a slot CW that does not fit                  the period waits for the next of its parity  TestLiveStaleCWWaitsForItsOwn
//	no key within Live.Wait, in all              passed as it came (or dropped)               TestLiveNoKeyWithinWaitPassesAsCame
//	a slot CW for a mode of its own (DES, AES)   checked with its system, not the input's     TestLiveCWCheckedWithItsOwnSystem
//
// The tests named alone are this package's, driving a Tracker packet by packet; the others run
// whole streams through package pipeline, or through libdvbcsa and the command
// (internal/testsupport/streamtest, with -tags dvbcsa), against schedules drawn at random.
//
// More precisely:
//
//   - A period's first unit start that can be checked (a PES header; a section whose CRC_32
//     lies in the packet, on a PID the PMT says carries sections) is descrambled with the
//     expected key (a sibling's, where one fitted in the same service period, else the list's
//     order) and, if that does not fit, with the others, nearest first in the schedule; only
//     the first bytes are descrambled for each trial. A key that fits decides the period and
//     the PID's schedule goes on from it; up to four unit starts are tried.
//   - A later unit start of a decided period is tried with its key too, every one (the start
//     code alone, on a PID that carries PES): one that does not fit ends the decision there
//     (the packets before keep their key). A loss the continuity counters hide shows nowhere
//     else.
//   - A break of a PID's continuity counters is packets lost (or streams joined) once the
//     PID's counters have followed on; the caller says so (Tracker.Packet). There the
//     service's clock stops saying anything: the periods after it are placed by unit starts
//     (and siblings' unit starts) after it alone.
//   - A period whose checked unit starts fit no key is left as it came: its packets pass
//     through untouched, still marked scrambled. A PID that never fits, after enough checks,
//     is taken for another CA system's and is not tried again.
//   - A period that may have begun unseen (after a silence longer than half the shortest
//     crypto period seen, or than lagLimit and eight times what the PID showed of its period,
//     with no sibling watching; a PID's first period late in the stream) takes a key only from
//     a unit start or a sibling. Without either its packets are left as they came (unplaced),
//     which says nothing against the keys. A period split off so, with nothing to check, whose
//     PID's next unit start fits a key, has that key when no whole crypto period fits in the
//     silence: its service had no silence as long as half the shortest period of its own seen
//     whole, and no sibling showed the other parity in it. Each PID keeps a short history of
//     its silences and changes of parity, so that this can be told once a PMT, come later,
//     names the siblings.
//   - A parity change that lasts a single packet, inside a period of two packets or more, is
//     a glitch: that packet is left as it came and the period goes on, unless the PID's
//     siblings changed periods meanwhile or its unit start fits a key.
//
// Until its period is decided, the caller holds its packets, and those after them (output
// order is input order). A period still open HoldPackets packets after its first packet is
// decided with what is known then, which bounds what is held. In an audio or video stream a
// decision comes within a few packets (the next PES start).
//
// # Keys that arrive while the stream runs
//
// With Config.Live, each PID's crypto periods take their control word from the key slots of a
// keys.Source (a key server's answers, a CW log that grows). The source only keeps, per slot
// and parity, the CWs that arrived in order, with their arrival numbers; which of them each
// period takes is decided here (slots.go), at its first packet and while it waits: the first
// CW of its parity that arrived after it began, other than the one the PID's previous period
// of that parity used and not one the period rejected, else the one its slot held when it
// began, a constant one as well as one that changed. A CW goes to the oldest waiting period it
// is new to. A period whose key has not come is held until it does, or until Live.Wait, after
// which its packets pass as they came (or are dropped); on a live input it waits so even when
// its PID's next period has begun. Keys are not searched, the server says which key applies,
// but each is checked before it is used, as a key list's expected key is: it must fit the
// period's first checkable unit start, and one that does not (the previous period's key, not
// replaced yet) is not used, the period waiting for the next. A source whose CWs may each be
// for a system of their own (keys.SystemSource: a DVBAPI server sets a descrambling mode per
// key slot) has each CW checked, and sized, with its system; a unit start shorter than that
// system changes (a payload it leaves clear) checks nothing.
//
// A decision depends only on the packets in stream order (and, with Live, on when the keys
// came), never on how a caller cuts the stream into units of work: that keeps a descrambled
// output the same for every batch size, worker count and lane width.
package period
