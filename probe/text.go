package probe

import (
	"bufio"
	"fmt"
	"io"

	"github.com/tsdescramble/tsdescramble/internal/units"
)

// WriteText writes the report as text for people: a summary, the services with their streams
// and CA systems, the EMM PIDs of the CAT, and a table of the PIDs with their packet counts.
func (rep *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	pf := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }

	pf("framing:   %d-byte packets\n", rep.Framing)
	pf("size:      %s, %s", byteSize(rep.Bytes), units.Count(rep.Packets, "packet"))
	if rep.SkippedBytes > 0 {
		pf(", %s skipped to regain sync", units.Count(rep.SkippedBytes, "byte"))
	}
	if rep.TruncatedBytes > 0 {
		pf(", truncated last packet of %s", units.Count(int64(rep.TruncatedBytes), "byte"))
	}
	if rep.TransportErrors > 0 {
		pf(", %s with transport errors", units.Count(rep.TransportErrors, "packet"))
	}
	pf("\n")
	if t := rep.Timing; t != nil {
		pf("duration:  %.3f s (%s on PID %#04x", t.DurationSeconds, units.Count(int64(t.PCRs), "PCR"), t.PCRPID)
		if t.Discontinuities > 0 {
			pf(", %s left out", units.Count(int64(t.Discontinuities), "discontinuity"))
		}
		pf(")\n")
		if t.Bitrate > 0 {
			pf("bitrate:   %s\n", bitRate(t.Bitrate))
		}
	} else {
		pf("duration:  unknown (no PCR)\n")
	}
	if rep.TransportStreamID != nil {
		pf("TS id:     %d (0x%04X)\n", *rep.TransportStreamID, *rep.TransportStreamID)
	}
	if rep.PSIErrors > 0 {
		pf("PSI:       %s ignored\n", units.Count(int64(rep.PSIErrors), "damaged section"))
	}
	if rep.PSIFailure != "" {
		pf("PSI:       %s\n", rep.PSIFailure)
	}

	present := map[uint16]bool{}
	for _, p := range rep.PIDs {
		present[p.PID] = true
	}
	// absent marks the PIDs that a table names but the stream does not carry.
	absent := func(pid uint16) string {
		if present[pid] {
			return ""
		}
		return "  (no packets)"
	}

	if len(rep.Services) == 0 {
		pf("\nno PAT: no services found\n")
	}
	for _, s := range rep.Services {
		pf("\nservice %d (0x%04X)", s.Number, s.Number)
		if s.Name != "" {
			pf(" %q", s.Name)
		}
		if s.Provider != "" {
			pf(" from %q", s.Provider)
		}
		pf(", PMT PID %#04x", s.PMTPID)
		if !s.PMTSeen {
			pf(" (no PMT seen)\n")
			continue
		}
		if s.PCRPID != nil {
			pf(", PCR PID %#04x", *s.PCRPID)
		}
		pf("\n")
		if s.Scrambling != nil {
			pf("  scrambling_descriptor 0x%02X: %s\n", s.Scrambling.Mode, s.Scrambling.Name)
		}
		for _, ca := range s.CA {
			pf("  CA %s (0x%04X), ECM PID %#04x%s\n", ca.SystemName, ca.SystemID, ca.ECMPID, absent(ca.ECMPID))
		}
		for _, st := range s.Streams {
			pf("  PID %#04x  type 0x%02X  %s%s\n", st.PID, st.StreamType, st.TypeName, absent(st.PID))
			for _, ca := range st.CA {
				pf("      CA %s (0x%04X), ECM PID %#04x%s\n", ca.SystemName, ca.SystemID, ca.ECMPID, absent(ca.ECMPID))
			}
		}
	}
	if len(rep.EMM) > 0 {
		pf("\nCAT:\n")
		for _, e := range rep.EMM {
			pf("  CA %s (0x%04X), EMM PID %#04x%s\n", e.SystemName, e.SystemID, e.EMMPID, absent(e.EMMPID))
		}
	}

	pf("\n%-6s  %10s  %10s  %10s  %10s  %8s  %7s  %s\n",
		"PID", "packets", "clear", "even", "odd", "reserved", "periods", "description")
	for _, p := range rep.PIDs {
		pf("%#04x  %10d  %10d  %10d  %10d  %8d  %7d  %s\n",
			p.PID, p.Packets, p.Clear, p.Even, p.Odd, p.Reserved, p.CryptoPeriods, p.Description)
	}
	return bw.Flush()
}

// byteSize writes n bytes in decimal units, with the exact count beside them.
func byteSize(n int64) string {
	if n < 1000 {
		return units.Bytes(n, 2)
	}
	return fmt.Sprintf("%s (%d bytes)", units.Bytes(n, 2), n)
}

// bitRate writes a rate in bits per second in decimal units.
func bitRate(b int64) string {
	switch {
	case b >= 1e6:
		return fmt.Sprintf("%.2f Mbit/s", float64(b)/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%.1f kbit/s", float64(b)/1e3)
	}
	return fmt.Sprintf("%d bit/s", b)
}
