package pipeline

import "time"

// Stats counts what a run did. Packet counts are of packet units; byte counts are of input bytes.
type Stats struct {
	Framing   Framing // framing of the last packet read
	BytesIn   int64   // bytes read from the input
	BytesOut  int64   // bytes written to the output
	Packets   int64   // packets read (and written: every packet read is written)
	Skipped   int64   // bytes dropped to regain sync
	Truncated int64   // bytes of a truncated last packet, dropped

	Clear       int64 // packets with TSC 00
	Reserved    int64 // packets with TSC 01, passed through untouched
	Even        int64 // packets with TSC 10
	Odd         int64 // packets with TSC 11
	Descrambled int64 // scrambled packets whose payload went through the cipher and whose TSC was cleared
	Short       int64 // scrambled packets whose payload is under 8 bytes: clear by definition, TSC cleared
	NoPayload   int64 // scrambled packets without a payload (adaptation field only, or a damaged one): untouched
	NoKey       int64 // scrambled packets of a parity that has no control word: untouched
	Unselected  int64 // scrambled packets of PIDs outside -pid / -service: untouched
	KeyChanges  int   // changes of scrambling parity (crypto period boundaries) seen
	KeySyncs    int   // times the CW list was realigned because another CW fit the stream

	// PES-start checks: the descrambled payload of every scrambled packet that starts a PES
	// packet is checked for a valid PES header (keys.PESStartOK).
	PESGood int64 // checks passed
	PESBad  int64 // checks failed: wrong key, or damaged data

	// PIDs holds the counts of every PID seen, in ascending PID order.
	PIDs []PIDStats

	Elapsed time.Duration // wall time of the run
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
	PID         uint16
	Packets     int64
	Clear       int64
	Reserved    int64
	Even        int64
	Odd         int64
	Descrambled int64 // through the cipher, plus short payloads whose TSC was cleared
	NoKey       int64
	// PES-start checks after descrambling, by parity: [0] even, [1] odd.
	PESGood [2]int64
	PESBad  [2]int64
}
