package psi

import (
	"testing"
)

// reg builds a registration_descriptor with a four-character format_identifier.
func reg(id string) []byte { return append([]byte{tagRegistration, 4}, id...) }

// t2mi is a T2MI_descriptor (EN 300 468 6.4.14): t2mi_stream_id 0, one stream, no common clock.
var t2mi = []byte{tagExtension, 4, extT2MI, 0x00, 0x00, 0x00}

func TestCarriageOf(t *testing.T) {
	cat := func(ds ...[]byte) (b []byte) {
		for _, d := range ds {
			b = append(b, d...)
		}
		return b
	}
	teletext := []byte{0x56, 5, 'e', 'n', 'g', 0x09, 0x00}
	ac3 := []byte{0x6A, 1, 0x00}
	subtitling := []byte{0x59, 8, 'd', 'e', 'u', 0x10, 0, 1, 0, 1}
	supplementaryAudio := []byte{tagExtension, 2, 0x06, 0x80} // another DVB extension descriptor
	for _, c := range []struct {
		name        string
		typ         uint8
		es, program []byte
		want        Carriage
	}{
		{"MPEG-2 video", 0x02, nil, nil, CarriagePES},
		{"MPEG-1 audio", 0x03, cat([]byte{0x0A, 4, 'e', 'n', 'g', 0}), nil, CarriagePES},
		{"AVC", 0x1B, nil, nil, CarriagePES},
		{"HEVC", 0x24, reg("HEVC"), nil, CarriagePES},
		{"AAC ADTS", 0x0F, nil, nil, CarriagePES},
		{"AAC LATM", 0x11, nil, nil, CarriagePES},
		{"AVS", 0x42, nil, nil, CarriagePES},
		{"DVB teletext", 0x06, teletext, nil, CarriagePES},
		{"DVB subtitles", 0x06, subtitling, nil, CarriagePES},
		{"DVB AC-3", 0x06, ac3, nil, CarriagePES},
		{"SMPTE 302M", 0x06, reg("BSSD"), nil, CarriagePES},
		{"Opus", 0x06, cat(reg("Opus"), []byte{tagExtension, 2, 0x80, 2}), nil, CarriagePES},
		{"PES private data, other extension", 0x06, supplementaryAudio, nil, CarriagePES},
		{"T2-MI", 0x06, t2mi, nil, CarriageOther},
		{"T2-MI after other descriptors", 0x06, cat(teletext, supplementaryAudio, t2mi), nil, CarriageOther},
		{"T2-MI in the program loop only", 0x06, nil, t2mi, CarriagePES},
		{"damaged loop", 0x06, []byte{tagExtension, 9, extT2MI}, nil, CarriagePES},
		{"KLV metadata in PES", 0x15, reg("KLVA"), nil, CarriagePES},
		{"ID3 metadata in PES", 0x15, reg("ID3 "), nil, CarriagePES},
		{"private sections", 0x05, nil, nil, CarriageSections},
		{"MPE", 0x0A, nil, nil, CarriageSections},
		{"DSM-CC U-N messages (object carousel)", 0x0B, []byte{0x66, 2, 0x00, 0x0B}, nil, CarriageSections},
		{"DSM-CC sections", 0x0D, nil, nil, CarriageSections},
		{"metadata sections", 0x16, nil, nil, CarriageSections},
		{"SL in sections", 0x13, nil, nil, CarriageSections},
		{"SCTE 35", 0x86, nil, nil, CarriageSections},
		{"SCTE 35 with CUEI", 0x86, reg("CUEI"), nil, CarriageSections},
		{"SCTE 35 with CUEI in the program loop", 0x86, nil, reg("CUEI"), CarriageSections},
		{"DTS-HD MA, HDMV in the program loop", 0x86, nil, reg("HDMV"), CarriagePES},
		{"DTS-HD MA, HDMV in the ES loop", 0x86, reg("HDMV"), nil, CarriagePES},
		{"HDMV among other registrations", 0x86, cat(reg("CUEI"), reg("HDMV")), nil, CarriagePES},
		{"HDMV LPCM", 0x80, nil, reg("HDMV"), CarriagePES},
		{"HDMV AC-3", 0x81, nil, reg("HDMV"), CarriagePES},
		{"HDMV TrueHD", 0x83, nil, reg("HDMV"), CarriagePES},
		{"HDMV PGS", 0x90, nil, reg("HDMV"), CarriagePES},
		{"HDMV text subtitles", 0x92, nil, reg("HDMV"), CarriagePES},
		{"HDMV secondary DTS-HD", 0xA2, nil, reg("HDMV"), CarriagePES},
		{"HDMV VC-1", 0xEA, reg("HDMV"), reg("HDMV"), CarriagePES},
		{"HDMV unknown", 0xC0, nil, reg("HDMV"), CarriageUnknown},
		{"HDMV AVC", 0x1B, nil, reg("HDMV"), CarriagePES},
		{"ATSC AC-3", 0x81, reg("AC-3"), nil, CarriagePES},
		{"ATSC E-AC-3", 0x87, nil, nil, CarriagePES},
		{"VC-1", 0xEA, reg("VC-1"), nil, CarriagePES},
		{"Dirac", 0xD1, reg("drac"), nil, CarriagePES},
		{"PGS without HDMV", 0x90, nil, nil, CarriageUnknown},
		{"user private", 0xC0, nil, nil, CarriageUnknown},
		{"MHEG", 0x07, nil, nil, CarriageUnknown},
		{"synchronized download", 0x14, nil, nil, CarriageUnknown},
		{"auxiliary", 0x0E, nil, nil, CarriageUnknown},
		{"IPMP", 0x7F, nil, nil, CarriageUnknown},
		{"reserved", 0x50, nil, nil, CarriageUnknown},
		{"forbidden 0", 0x00, nil, nil, CarriageUnknown},
	} {
		if got := CarriageOf(c.typ, c.es, c.program); got != c.want {
			t.Errorf("%s: stream_type %#02x: %v, want %v", c.name, c.typ, got, c.want)
		}
		if c.program == nil {
			if got := (Stream{Type: c.typ, Descriptors: c.es}).Carriage(); got != c.want {
				t.Errorf("%s: Stream.Carriage %v, want %v", c.name, got, c.want)
			}
		}
	}
}

func TestCarriageString(t *testing.T) {
	for c, want := range map[Carriage]string{CarriageUnknown: "unknown", CarriagePES: "PES",
		CarriageSections: "sections", CarriageOther: "other", 99: "unknown"} {
		if c.String() != want {
			t.Errorf("%d: %q, want %q", c, c.String(), want)
		}
	}
}

func TestTrackerCarriage(t *testing.T) {
	tr := NewTracker()
	if tr.Carriage(PATPID) != CarriageUnknown || tr.Carriage(0x100) != CarriageUnknown {
		t.Fatal("a new Tracker knows carriages")
	}
	tr, c := demo(t)
	want := map[uint16]Carriage{
		PATPID: CarriageSections, 0x0010: CarriageSections, // PAT, network PID
		0x100: CarriageSections, 0x200: CarriageSections, // PMTs
		0x300: CarriageSections, 0x301: CarriageSections, // ECMs
		0x101: CarriagePES, 0x102: CarriagePES, 0x201: CarriagePES, 0x202: CarriagePES,
		0x001: CarriageUnknown, 0x555: CarriageUnknown, NullPID: CarriageUnknown, 0xFFFF: CarriageUnknown,
	}
	check := func(want map[uint16]Carriage) {
		t.Helper()
		for pid, w := range want {
			if got := tr.Carriage(pid); got != w {
				t.Errorf("PID %#x: %v, want %v", pid, got, w)
			}
			if got := PIDCarriage(tr, pid); got != w {
				t.Errorf("PIDCarriage %#x: %v, want %v", pid, got, w)
			}
		}
	}
	check(want)
	if n := testing.AllocsPerRun(1000, func() { tr.Carriage(0x101) }); n != 0 {
		t.Fatalf("%v allocations per Carriage", n)
	}

	// A Blu-ray-like service (registration "HDMV" in program_info) and a broadcast one with
	// SCTE 35, T2-MI and a stream whose PID another service also lists.
	bd := pmt(1, 1, 0x1011, reg("HDMV"),
		es{0x1B, 0x1011, nil}, es{0x86, 0x1100, nil}, es{0x81, 0x1101, reg("AC-3")},
		es{0x90, 0x1200, nil}, es{0xC0, 0x1300, nil})
	bc := pmt(2, 1, 0x0201, reg("CUEI"),
		es{0x1B, 0x0201, nil}, es{0x86, 0x0203, nil}, es{0x06, 0x0204, t2mi},
		es{0x86, 0x1100, nil}, es{0x02, 0x1300, caDesc(0x2600, NullPID)})
	feed(tr, c.packets(0x100, bd)...)
	feed(tr, c.packets(0x200, bc)...)
	check(map[uint16]Carriage{
		0x1011: CarriagePES, 0x1100: CarriagePES, 0x1101: CarriagePES, 0x1200: CarriagePES,
		0x1300: CarriagePES, // unknown in service 1, PES in service 2
		0x0201: CarriagePES, 0x0203: CarriageSections, 0x0204: CarriageOther,
		0x101: CarriageUnknown, 0x300: CarriageUnknown, 0x301: CarriageUnknown, // left with the old PMT
		NullPID: CarriageUnknown, // a CA_PID of 0x1FFF names no PID
	})

	// A new PAT without program 2 drops its PIDs; without program 0, the network PID.
	feed(tr, c.packets(PATPID, pat(0x0042, 1, 1, 0x0100))...)
	check(map[uint16]Carriage{
		0x0010: CarriageUnknown, 0x200: CarriageUnknown, 0x0203: CarriageUnknown,
		0x1100: CarriagePES, 0x100: CarriageSections,
	})
	if _, ok := tr.NetworkPID(); ok {
		t.Error("NetworkPID after a PAT without program 0")
	}
}

func TestNetworkPID(t *testing.T) {
	tr, _ := demo(t)
	if pid, ok := tr.NetworkPID(); !ok || pid != 0x0010 {
		t.Fatalf("NetworkPID %#x %v", pid, ok)
	}
}

func TestDescriptorsAreCopies(t *testing.T) {
	tr, c := demo(t)
	svcs := tr.Services()
	svcs[0].Descriptors[0] = 0xEE
	svcs[0].Streams[1].Descriptors[0] = 0xEE
	// A new version of the PMT reuses the assembler's buffer: what was handed out stays.
	feed(tr, c.packets(0x100, pmt(1, 5, 0x0101, reg("ABCD"), es{0x02, 0x0101, reg("WXYZ")}))...)
	old := demoServices[0]
	if got := tr.Services(); string(got[0].Descriptors) != string(reg("ABCD")) ||
		string(got[0].Streams[0].Descriptors) != string(reg("WXYZ")) || got[0].Streams[0].Carriage() != CarriagePES {
		t.Fatalf("new PMT: %+v", got[0])
	}
	if string(svcs[0].Streams[1].Descriptors[1:]) != string(old.Streams[1].Descriptors[1:]) {
		t.Fatal("a copy handed out changed with the Tracker")
	}
}
