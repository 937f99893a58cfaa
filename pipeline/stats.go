package pipeline

import (
	"time"

	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/ts"
)

// Stats counts what a run did. Packet counts are of packet units; byte counts are of input bytes.
type Stats struct {
	Framing    ts.Framing `json:"framing"`     // framing of the last packet read
	BytesIn    int64      `json:"bytes_in"`    // bytes read from the input
	BytesOut   int64      `json:"bytes_out"`   // bytes of the whole packet units written to the output
	PacketsOut int64      `json:"packets_out"` // packet units written whole (a write cut short, by a full disk, may leave part of one more)
	Packets    int64      `json:"packets"`     // packets read (and written, unless writing failed)
	Skipped    int64      `json:"skipped"`     // bytes dropped to regain sync
	Truncated  int64      `json:"truncated"`   // bytes of a truncated last packet, dropped

	Clear       int64 `json:"clear"`        // packets with TSC 00
	Reserved    int64 `json:"reserved"`     // packets with TSC 01, passed through untouched
	Even        int64 `json:"even"`         // packets with TSC 10
	Odd         int64 `json:"odd"`          // packets with TSC 11
	Descrambled int64 `json:"descrambled"`  // scrambled packets whose payload went through the cipher and whose ts.TSC was cleared
	Short       int64 `json:"short"`        // payloads too short for the system (under 8 bytes for CSA2): clear by definition, ts.TSC changed
	NoPayload   int64 `json:"no_payload"`   // scrambled packets without a payload (adaptation field only, or a damaged one): untouched
	NoKey       int64 `json:"no_key"`       // scrambled packets of a parity that has no control word: untouched
	Unselected  int64 `json:"unselected"`   // scrambled packets of PIDs outside -pid / -service: untouched
	Scrambled   int64 `json:"scrambled"`    // packets scrambled (or rescrambled) and marked with an output parity
	KeyChanges  int   `json:"key_changes"`  // changes of scrambling parity over the processed packets of all PIDs together
	KeySyncs    int   `json:"key_syncs"`    // times a ts.PID's CW list was (re)aligned because another CW than the expected one fit
	KeyFailures int   `json:"key_failures"` // unit starts that did not fit the key their crypto period had: each began a period of its own
	// UnseenKeyChanges counts the key failures after which another CW fitted: the key changed
	// where the stream showed no change (packets lost that the continuity counters hid, two
	// streams joined), and its PID's packets from there to that unit start went out
	// descrambled with the key before: wrong.
	UnseenKeyChanges int `json:"unseen_key_changes"`

	// Crypto periods, counted per PID (a PID's parity changes start its periods): how many, and
	// how many no key fitted, whose packets were left as they came.
	Periods       int   `json:"periods"`
	PeriodsLeft   int   `json:"periods_left_scrambled"`
	LeftScrambled int64 `json:"left_scrambled"` // scrambled packets of periods no key fitted, and glitches: untouched
	// Unplaced counts the scrambled packets of periods that began where the key may have
	// changed unseen (a PID silent for long, packets lost, a splice) and that no unit start
	// placed: untouched, as no evidence said which key they have. PeriodsUnplaced counts
	// those periods.
	Unplaced        int64 `json:"unplaced"`
	PeriodsUnplaced int   `json:"periods_unplaced"`
	ParityGlitches  int64 `json:"parity_glitches"` // single packets of the other parity inside a period: untouched

	// CCErrors counts continuity-counter errors over all PIDs: packets lost, repeated more
	// than once or out of order before the input (null packets are not counted).
	CCErrors int64 `json:"cc_errors"`

	// Samples are copies of the first scrambled unit starts of the input, as they came, for
	// a caller that wants to tell why keys did not fit (a swapped parity, an entropy-reduced
	// CW, ...) by trying other keys on them. Not written to JSON.
	Samples []Sample `json:"-"`

	// Unit-start checks: the descrambled payload of every scrambled packet that starts a PES
	// packet is checked for a valid PES header (ts.PESStartOK), and one that starts a section
	// wholly in the packet for its CRC_32, as the PMT says the PID carries (either, when it does
	// not say). PIDs that carry neither (T2-MI) are not checked.
	PESGood int64 `json:"pes_good"` // checks passed
	PESBad  int64 `json:"pes_bad"`  // checks failed: wrong key, or damaged data

	// Services lists the program numbers of the services the PAT named, in PAT order, as it
	// stood at the end of the run.
	Services []uint16 `json:"services"`

	// PIDs holds the counts of every PID seen, in ascending PID order.
	PIDs []PIDStats `json:"pids"`

	Elapsed time.Duration `json:"elapsed_ns"` // wall time of the run

	// Latency is how long the first packet of the unit of work written last waited in the
	// run, from its arrival to its write; LatencyMax the longest so far. Kept only with
	// Options.Latency, whose input notes when each packet arrives, for the metrics of a live
	// run (Observer); not written to JSON.
	Latency    time.Duration `json:"-"`
	LatencyMax time.Duration `json:"-"`

	// LiveKeys counts the waits for keys from a key server, when Options.LiveKeys is set.
	LiveKeys *LiveKeyStats `json:"live_keys,omitempty"`
}

// MBPerSecond returns the input throughput of the run in 10^6 bytes per second.
func (s *Stats) MBPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.BytesIn) / s.Elapsed.Seconds() / 1e6
}

// PIDStats counts the packets of one PID.
type PIDStats struct {
	PID         uint16 `json:"pid"`
	Packets     int64  `json:"packets"`
	Clear       int64  `json:"clear"`
	Reserved    int64  `json:"reserved"`
	Even        int64  `json:"even"`
	Odd         int64  `json:"odd"`
	Descrambled int64  `json:"descrambled"` // through the cipher, ts.TSC cleared
	Short       int64  `json:"short"`       // payload too short for the system: clear by definition, ts.TSC changed
	NoPayload   int64  `json:"no_payload"`  // scrambled without a payload: untouched
	NoKey       int64  `json:"no_key"`      // scrambled, no key for the parity: untouched
	Unselected  int64  `json:"unselected"`  // scrambled, outside -pid / -service: untouched
	Scrambled   int64  `json:"scrambled"`   // scrambled or rescrambled on output
	// Crypto periods of this PID: fitted by a checked unit start, descrambled with the
	// schedule's key unchecked (no unit start could be checked), and left as they came
	// (no key fitted).
	Periods          int   `json:"periods"`
	PeriodsFit       int   `json:"periods_fit"`
	PeriodsUnchecked int   `json:"periods_unchecked"`
	PeriodsLeft      int   `json:"periods_left_scrambled"`
	PeriodsUnplaced  int   `json:"periods_unplaced"` // periods nothing placed (Stats.Unplaced): left as they came
	LeftScrambled    int64 `json:"left_scrambled"`   // packets of periods left as they came, and glitches
	Unplaced         int64 `json:"unplaced"`         // packets of periods nothing placed: left as they came
	// Checked counts the packets descrambled under a key that a unit start of the same
	// crypto period confirmed; Unchecked those descrambled under a key nothing checked (a
	// period without a checkable unit start, or keys given without a check).
	Checked   int64  `json:"checked"`
	Unchecked int64  `json:"unchecked"`
	CCErrors  int64  `json:"cc_errors"` // continuity-counter errors (see Stats.CCErrors)
	Carriage  string `json:"carriage"`  // what the PMT says the ts.PID carries: PES, sections, other or unknown
	// KeyFit sums the periods up: "all" fitted (some may have taken the schedule's key
	// unchecked), "unchecked" (none could be checked: the schedule's keys), "some" (others
	// were left scrambled), "none" (no control word fits: left scrambled, as for another CA
	// system's PID), or "" for a PID without scrambled periods.
	KeyFit string `json:"key_fit,omitempty"`
	// Unit-start checks after descrambling, by parity: [0] even, [1] odd.
	PESGood [2]int64 `json:"pes_good"`
	PESBad  [2]int64 `json:"pes_bad"`
}

// maxSamples bounds Stats.Samples.
const maxSamples = 16

// Sample is a scrambled payload that starts a PES packet or a section, as it came in.
type Sample struct {
	PID      uint16
	Odd      bool         // scrambled with the odd key (TSC 11)
	Carriage psi.Carriage // what the PMT said the PID carries when the packet came
	Payload  []byte
}
