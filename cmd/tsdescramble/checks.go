package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tsdescramble/tsdescramble/internal/units"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// junkMinBytes is the size from which an input whose packets make under 1% of it is taken for
// something else than a transport stream. Random bytes hold three sync bytes a packet apart
// about once in 5 MB (three framings, 2^24 positions each), so they give a few "packets"; under
// 1% of 100 kB is five packets at most, and the share holds for larger inputs too.
const junkMinBytes = 100_000

// notTransportStream returns why a run's input is not a transport stream although the framer
// found a few packets in it, or "".
func notTransportStream(st *pipeline.Stats) string {
	packetBytes := st.BytesIn - st.Skipped - st.Truncated
	if st.BytesIn < junkMinBytes || st.Packets == 0 || packetBytes*100 >= st.BytesIn {
		return ""
	}
	return fmt.Sprintf("the input is not a transport stream: only %s (%s) found in %s, the rest skipped (188, 192 or 204-byte packets expected)",
		plural(int(st.Packets), "packet"), units.Bytes(packetBytes, 1), units.Bytes(st.BytesIn, 1))
}

// mostlyNotTransportStream returns a warning when more than half of the input was skipped to
// find packets, or "".
func mostlyNotTransportStream(st *pipeline.Stats) string {
	if st.Skipped*2 <= st.BytesIn {
		return ""
	}
	return fmt.Sprintf("the input is mostly not a transport stream: %.0f%% of it (%s) was skipped to find packets",
		100*float64(st.Skipped)/float64(st.BytesIn), units.Bytes(st.Skipped, 1))
}

// unseenSelection returns why a run with -service or -pid processed nothing: the service or
// none of the PIDs appeared in the stream. It returns "" otherwise.
func unseenSelection(opts *pipeline.Options, st *pipeline.Stats) string {
	if st.Descrambled+st.Short+st.Scrambled > 0 {
		return ""
	}
	did := "descrambled"
	if opts.Mode == pipeline.Scramble {
		did = "scrambled"
	}
	if n := opts.Service; n > 0 && !slices.Contains(st.Services, uint16(n)) {
		if len(st.Services) == 0 {
			return fmt.Sprintf("-service %d: the stream has no PAT naming services, so nothing was %s", n, did)
		}
		var names []string
		for _, s := range st.Services {
			names = append(names, fmt.Sprint(s))
		}
		return fmt.Sprintf("-service %d: no such service in the stream (its PAT names %s), so nothing was %s", n, strings.Join(names, ", "), did)
	}
	if len(opts.PIDs) > 0 {
		var seen []string
		for _, ps := range st.PIDs {
			if slices.Contains(opts.PIDs, ps.PID) {
				return ""
			}
			seen = append(seen, fmt.Sprintf("%#04x", ps.PID))
		}
		if len(seen) > 8 {
			seen = append(seen[:8], fmt.Sprintf("and %d more", len(seen)-8))
		}
		return fmt.Sprintf("-pid: none of these PIDs is in the stream (it holds %s), so nothing was %s", strings.Join(seen, ", "), did)
	}
	return ""
}

// limitsNote says how -workers and -batch were cut down to keep the packets in flight within
// pipeline.MaxMemory, or returns "".
func limitsNote(workers, batch int) string {
	w, b, _ := pipeline.Limits(workers, batch)
	if w == workers && b == batch {
		return ""
	}
	return fmt.Sprintf("-workers %d -batch %d would take more than %d MiB of memory: running with -workers %d -batch %d",
		workers, batch, pipeline.MaxMemory>>20, w, b)
}
