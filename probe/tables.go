package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/asticode/go-astits"

	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/psi"
)

// errAborted closes the pipe to the demuxer when Probe returns before the end of the input.
var errAborted = errors.New("probe: reading stopped")

// errReaderGone closes the pipe from the demuxer's side when its goroutine ends, so that a
// write from the reading loop fails at once instead of blocking on a reader that is gone.
var errReaderGone = errors.New("probe: PSI reader ended")

// psiReader runs astits's demuxer in a goroutine over a pipe that the reading loop fills with
// the 188-byte packets of the PSI PIDs. The pipe blocks, so the demuxer never sees a false end
// of input: astits flushes the sections it is still gathering when its reader reports EOF,
// which a drained buffer polled between packets would do in the middle of a table.
type psiReader struct {
	pw      *io.PipeWriter
	bw      *bufio.Writer // batches packets, so the two goroutines meet once per batch
	dead    bool          // a write failed: the demuxer has stopped, feed no more
	done    chan struct{} // closed when the goroutine has ended
	stopped bool
	t       tables // written by the goroutine only, read once done is closed
}

func startPSIReader() *psiReader {
	pr, pw := io.Pipe()
	s := &psiReader{
		pw:   pw,
		bw:   bufio.NewWriterSize(pw, 64*pipeline.PacketSize),
		done: make(chan struct{}),
		t: tables{
			pmts: map[uint16]*astits.PMTData{},
			sdts: map[uint16]map[uint16]sdtService{},
		},
	}
	go s.run(pr)
	return s
}

// feed passes one 188-byte packet to the demuxer.
func (s *psiReader) feed(p []byte) {
	if s.dead {
		return
	}
	if _, err := s.bw.Write(p); err != nil {
		s.dead = true
	}
}

// finish ends the demuxer's input, waits until it has read everything, and returns the tables.
func (s *psiReader) finish() *tables {
	if !s.dead {
		s.bw.Flush()
	}
	s.pw.Close()
	<-s.done
	s.stopped = true
	return &s.t
}

// stop ends the goroutine if finish has not: the demuxer's next read fails and it returns.
func (s *psiReader) stop() {
	if s.stopped {
		return
	}
	s.pw.CloseWithError(errAborted)
	<-s.done
	s.stopped = true
}

func (s *psiReader) run(pr *io.PipeReader) {
	defer close(s.done)
	defer func() {
		// astits is third-party code fed with whatever the input holds: a panic in it must
		// not take the process down, and it only costs the tables, not the packet counts.
		if v := recover(); v != nil {
			s.t.failure = fmt.Sprintf("the PSI reader stopped on damaged tables: %v", v)
		}
		pr.CloseWithError(errReaderGone)
	}()
	dmx := astits.NewDemuxer(context.Background(), pr,
		astits.DemuxerOptPacketSize(pipeline.PacketSize),
		astits.DemuxerOptPacketsParser(s.t.parseCAT))
	for {
		d, err := dmx.NextData()
		if err != nil {
			if errors.Is(err, astits.ErrNoMorePackets) || errors.Is(err, errAborted) || errors.Is(err, io.ErrClosedPipe) {
				return
			}
			// A section with a bad CRC or bad lengths: astits has consumed its packets, so
			// the next call goes on with the rest of the stream.
			s.t.errors++
			continue
		}
		s.t.add(d)
	}
}

// sdtService is a service's entry in an SDT.
type sdtService struct{ name, provider string }

// tables gathers what the demuxer delivered: the PAT programs, the latest PMT of each program,
// the SDT entries, the CAT descriptors, and the count of sections it could not read.
type tables struct {
	// The programs of every PAT section seen, in order of first appearance: a PAT may span
	// several sections, which astits delivers one by one, and a recording may hold several
	// versions; a probe reports all the programs it met, each with its latest PMT PID.
	havePAT  bool
	tsid     uint16
	programs []astits.PATProgram
	pmts     map[uint16]*astits.PMTData       // by program_number
	sdts     map[uint16]map[uint16]sdtService // by transport_stream_id, then service_id
	cat      []EMM                            // CA descriptors of the CAT, without repeats
	seen     map[[2]uint16]bool               // (CA_system_ID, CA_PID) pairs already in cat
	errors   int
	failure  string
}

func (t *tables) add(d *astits.DemuxerData) {
	switch {
	case d.PAT != nil:
		t.havePAT, t.tsid = true, d.PAT.TransportStreamID
	next:
		for _, prog := range d.PAT.Programs {
			if prog == nil {
				continue
			}
			for i := range t.programs {
				if t.programs[i].ProgramNumber == prog.ProgramNumber {
					t.programs[i].ProgramMapID = prog.ProgramMapID
					continue next
				}
			}
			t.programs = append(t.programs, *prog)
		}
	case d.PMT != nil:
		t.pmts[d.PMT.ProgramNumber] = d.PMT
	case d.SDT != nil:
		m := t.sdts[d.SDT.TransportStreamID]
		if m == nil {
			m = map[uint16]sdtService{}
			t.sdts[d.SDT.TransportStreamID] = m
		}
		for _, s := range d.SDT.Services {
			if s == nil {
				continue
			}
			for _, desc := range s.Descriptors {
				if desc != nil && desc.Service != nil {
					m[s.ServiceID] = sdtService{dvbString(desc.Service.Name), dvbString(desc.Service.Provider)}
				}
			}
		}
	}
}

// parseCAT reads the conditional access sections (ISO/IEC 13818-1, 2.4.4.6) of the payload
// units of PID 1, which astits leaves to its caller, and lets astits go on with the other PIDs.
func (t *tables) parseCAT(ps []*astits.Packet) ([]*astits.DemuxerData, bool, error) {
	if len(ps) == 0 || ps[0].Header.PID != pidCAT {
		return nil, false, nil
	}
	if !ps[0].Header.PayloadUnitStartIndicator {
		return nil, true, nil // the tail of a section whose start was lost
	}
	var b []byte
	for _, p := range ps {
		b = append(b, p.Payload...)
	}
	if len(b) == 0 || int(b[0])+1 > len(b) {
		t.errors++
		return nil, true, nil
	}
	b = b[1+int(b[0]):] // pointer_field
	for len(b) >= 3 && b[0] != 0xFF {
		n := 3 + (int(b[1]&0x0F)<<8 | int(b[2]))
		if b[0] != 0x01 || n < 12 || n > len(b) || psi.CRC32(b[:n]) != 0 {
			t.errors++
			return nil, true, nil
		}
		for d := b[8 : n-4]; len(d) >= 2; {
			tag, l := d[0], int(d[1])
			if 2+l > len(d) {
				t.errors++
				break
			}
			if tag == tagCA && l >= 4 {
				id, pid := uint16(d[2])<<8|uint16(d[3]), uint16(d[4]&0x1F)<<8|uint16(d[5])
				if t.seen == nil {
					t.seen = map[[2]uint16]bool{}
				}
				if !t.seen[[2]uint16{id, pid}] {
					t.seen[[2]uint16{id, pid}] = true
					t.cat = append(t.cat, EMM{SystemID: id, SystemName: CASystemName(id), EMMPID: pid})
				}
			}
			d = d[2+l:]
		}
		b = b[n:]
	}
	return nil, true, nil
}

// caDescriptors returns the CA descriptors among ds; astits hands them over undecoded.
func caDescriptors(ds []*astits.Descriptor) []CA {
	cas := []CA{}
	for _, d := range ds {
		if d == nil || d.Tag != tagCA || d.Unknown == nil || len(d.Unknown.Content) < 4 {
			continue
		}
		c := d.Unknown.Content
		id := uint16(c[0])<<8 | uint16(c[1])
		ca := CA{SystemID: id, SystemName: CASystemName(id), ECMPID: uint16(c[2]&0x1F)<<8 | uint16(c[3])}
		if !slices.Contains(cas, ca) {
			cas = append(cas, ca)
		}
	}
	return cas
}

// fill sets the services and EMMs of rep from the tables.
func (t *tables) fill(rep *Report) {
	rep.Services = []Service{}
	rep.EMM = []EMM{}
	if t.cat != nil {
		rep.EMM = t.cat
	}
	if !t.havePAT {
		return
	}
	tsid := t.tsid
	rep.TransportStreamID = &tsid
	// The SDT of this transport stream (SDT actual) has its transport_stream_id; the others
	// describe other multiplexes. Muxers that leave the two ids unequal are common enough to
	// fall back on the only SDT there is.
	sdt := t.sdts[tsid]
	if sdt == nil && len(t.sdts) == 1 {
		for _, m := range t.sdts {
			sdt = m
		}
	}
	for _, prog := range t.programs {
		if prog.ProgramNumber == 0 { // program 0 points at the NIT
			nit := prog.ProgramMapID
			rep.NITPID = &nit
			continue
		}
		s := Service{Number: prog.ProgramNumber, PMTPID: prog.ProgramMapID, CA: []CA{}, Streams: []Stream{}}
		if e, ok := sdt[s.Number]; ok {
			s.Name, s.Provider = e.name, e.provider
		}
		if pmt := t.pmts[s.Number]; pmt != nil {
			s.PMTSeen = true
			pcr := pmt.PCRPID
			s.PCRPID = &pcr
			s.CA = caDescriptors(pmt.ProgramDescriptors)
			for _, es := range pmt.ElementaryStreams {
				if es == nil {
					continue
				}
				s.Streams = append(s.Streams, Stream{
					PID:        es.ElementaryPID,
					StreamType: uint8(es.StreamType),
					TypeName:   typeName(es.StreamType, es.ElementaryStreamDescriptors),
					CA:         caDescriptors(es.ElementaryStreamDescriptors),
				})
			}
		}
		rep.Services = append(rep.Services, s)
	}
}
