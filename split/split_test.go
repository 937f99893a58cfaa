package split_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/asticode/go-astits"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/testmedia"
	"github.com/tsdescramble/tsdescramble/psi"
	"github.com/tsdescramble/tsdescramble/split"
	"github.com/tsdescramble/tsdescramble/ts"
)

// packetsByPID lists the packets of each PID of a stream, in order.
func packetsByPID(stream []byte) map[uint16][][]byte {
	m := map[uint16][][]byte{}
	for i := 0; i+ts.PacketSize <= len(stream); i += ts.PacketSize {
		p := stream[i : i+ts.PacketSize]
		m[ts.PID(p)] = append(m[ts.PID(p)], p)
	}
	return m
}

// astitsView is what go-astits, an independent demultiplexer, reads of a stream: the programs
// of its PATs, the elementary PIDs of each PMT, the services of its SDTs.
type astitsView struct {
	programs map[uint16]uint16   // program number to PMT PID, over every PAT
	streams  map[uint16][]uint16 // program number to elementary PIDs
	sdt      map[uint16]bool     // service_ids of the SDTs
}

func readWithAstits(t *testing.T, stream []byte) astitsView {
	t.Helper()
	v := astitsView{programs: map[uint16]uint16{}, streams: map[uint16][]uint16{}, sdt: map[uint16]bool{}}
	dmx := astits.NewDemuxer(context.Background(), bytes.NewReader(stream))
	for {
		d, err := dmx.NextData()
		if errors.Is(err, astits.ErrNoMorePackets) || errors.Is(err, io.EOF) {
			return v
		}
		if err != nil {
			t.Fatalf("go-astits: %v", err)
		}
		switch {
		case d.PAT != nil:
			for _, p := range d.PAT.Programs {
				v.programs[p.ProgramNumber] = p.ProgramMapID
			}
		case d.PMT != nil:
			var pids []uint16
			for _, es := range d.PMT.ElementaryStreams {
				pids = append(pids, es.ElementaryPID)
			}
			v.streams[d.PMT.ProgramNumber] = pids
		case d.SDT != nil:
			for _, s := range d.SDT.Services {
				v.sdt[s.ServiceID] = true
			}
		}
	}
}

// TestSplitFourPrograms splits an ffmpeg multiplex of four programs into four outputs and
// checks each with go-astits and ffprobe: one program in its PATs, its own PMT and streams, an
// SDT of its own service, and every packet of its PIDs as the multiplex carried it from the
// output's start on, in order, with nothing of the other services.
func TestSplitFourPrograms(t *testing.T) {
	stream := testmedia.Programs(t, 4, 4)
	in := readWithAstits(t, stream)
	if len(in.programs) != 4 {
		t.Fatalf("the multiplex has %d programs, want 4", len(in.programs))
	}
	outs := map[uint16]*bytes.Buffer{}
	writers := map[uint16]io.Writer{}
	for n := range uint16(4) {
		outs[n+1] = &bytes.Buffer{}
		writers[n+1] = outs[n+1]
	}
	s := split.New(writers)
	// Writes cut anywhere: the splitter keeps a cut packet for the next.
	for b := stream; len(b) > 0; {
		k := min(1000, len(b))
		if _, err := s.Write(b[:k]); err != nil {
			t.Fatal(err)
		}
		b = b[k:]
	}
	byPID := packetsByPID(stream)
	for n, out := range outs {
		got := readWithAstits(t, out.Bytes())
		if len(got.programs) != 1 || got.programs[n] != in.programs[n] {
			t.Errorf("service %d: programs in its PATs %v, want only %d → PMT PID %#x", n, got.programs, n, in.programs[n])
		}
		if !slices.Equal(got.streams[n], in.streams[n]) || len(got.streams) != 1 {
			t.Errorf("service %d: PMTs %v, want its own, %v", n, got.streams, in.streams[n])
		}
		if len(got.sdt) != 1 || !got.sdt[n] {
			t.Errorf("service %d: SDT services %v, want its own alone", n, got.sdt)
		}
		outPIDs := packetsByPID(out.Bytes())
		keep := append([]uint16{in.programs[n]}, in.streams[n]...)
		for pid, pkts := range outPIDs {
			switch {
			case pid == psi.PATPID || pid == 0x11:
				continue // the splitter's own tables
			case !slices.Contains(keep, pid):
				t.Errorf("service %d: %d packets of PID %#x, which is not the service's", n, len(pkts), pid)
				continue
			}
			all := byPID[pid]
			// The output's packets of the PID are the multiplex's from some packet on, all of
			// them: the output starts at its first PAT, so only the first few may be missing.
			from := len(all) - len(pkts)
			if from < 0 || !slices.EqualFunc(pkts, all[from:], bytes.Equal) {
				t.Errorf("service %d PID %#x: the %d packets are not the multiplex's last %d", n, pid, len(pkts), len(pkts))
			}
			if from > len(all)/10 {
				t.Errorf("service %d PID %#x: %d of %d packets missing at the start", n, pid, from, len(all))
			}
		}
		for _, pid := range keep {
			if len(outPIDs[pid]) == 0 {
				t.Errorf("service %d: no packet of its PID %#x", n, pid)
			}
		}
		ffprobe(t, n, out.Bytes())
	}
}

// ffprobe checks that ffprobe reads every stream of an output without an error.
func ffprobe(t *testing.T, n uint16, stream []byte) {
	t.Helper()
	path, err := exec.LookPath("ffprobe")
	if err != nil {
		t.Log("ffprobe is not installed: outputs not played (apt-get install ffmpeg)")
		return
	}
	f := filepath.Join(t.TempDir(), "out.ts")
	if err := os.WriteFile(f, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "-v", "error", "-show_streams", "-of", "json", f)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Errorf("service %d: ffprobe: %v %s", n, err, stderr.String())
	}
	var probe struct {
		Streams []struct {
			Codec string `json:"codec_name"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &probe); err != nil {
		t.Fatalf("service %d: ffprobe's JSON: %v", n, err)
	}
	var codecs []string
	for _, st := range probe.Streams {
		codecs = append(codecs, st.Codec)
	}
	if !slices.Equal(codecs, []string{"mpeg2video", "mp2"}) {
		t.Errorf("service %d: ffprobe sees streams %v, want mpeg2video and mp2", n, codecs)
	}
}
