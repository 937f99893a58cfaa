package dvbapi

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The client's messages, byte for byte, as the protocol description lays them out.
func TestClientMessageTranscripts(t *testing.T) {
	if got, want := AppendClientInfo(nil, "tsd"), unhex(t, "FFFF0001 0003 03 747364"); !bytes.Equal(got, want) {
		t.Errorf("CLIENT_INFO % X, want % X", got, want)
	}
	got := AppendFilterData(nil, 7, 1, 2, []byte{0x80, 0x70, 0x01, 0xAA})
	if want := unhex(t, "A5 00000007 FFFF0000 01 02 807001AA"); !bytes.Equal(got, want) {
		t.Errorf("FILTER_DATA % X, want % X", got, want)
	}
	if got, want := AppendStop(nil, 9, 0xFF), unhex(t, "A5 00000009 9F803F04 830200FF"); !bytes.Equal(got, want) {
		t.Errorf("CA stop % X, want % X", got, want)
	}
	svc := CAPMTService{ProgramNumber: 0x0102, Version: 3, PMTPID: 0x1000, Demux: 0,
		CA:      []byte{0x09, 0x04, 0x0B, 0x00, 0xE5, 0x00},
		Streams: []CAPMTStream{{Type: 0x02, PID: 0x100}, {Type: 0x04, PID: 0x101, CA: []byte{0x09, 0x04, 0x0B, 0x00, 0xE5, 0x01}}}}
	got, err := AppendCAPMT(nil, 1, ListOnly, &svc)
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `A5 00000001 9F8032 2B
		03 0102 C7 F014
		01 830100 84021000 860100 870100 09040B00E500
		02 E100 F000
		04 E101 F007 01 09040B00E501`)
	if !bytes.Equal(got, want) {
		t.Errorf("CA PMT\n% X\nwant\n% X", got, want)
	}
}

// The server's messages, decoded from their bytes.
func TestServerMessageTranscripts(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want Message
	}{
		{"SERVER_INFO", "A5 00000000 FFFF0002 0003 05 4F5363616D",
			Message{Opcode: OpServerInfo, Version: 3, Name: "OScam"}},
		{"SERVER_INFO unframed", "FFFF0002 0002 00", Message{Opcode: OpServerInfo, Version: 2}},
		{"CA_SET_PID", "A5 00000004 40086F87 00 00000100 00000002",
			Message{MsgID: 4, Opcode: OpCASetPID, PID: 0x100, Index: 2}},
		{"CA_SET_PID remove", "A5 00000004 40086F87 01 00000101 FFFFFFFF",
			Message{MsgID: 4, Opcode: OpCASetPID, Adapter: 1, PID: 0x101, Index: -1}},
		{"CA_SET_DESCR", "A5 00000005 40106F86 00 00000001 00000001 1122336644556 6FF",
			Message{MsgID: 5, Opcode: OpCASetDescr, Index: 1, Parity: 1, CW: [8]byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}}},
		{"CA_SET_DESCR_MODE", "A5 00000006 400C6F88 00 00000000 00000002 00000001",
			Message{MsgID: 6, Opcode: OpCASetDescrMode, Algo: AlgoAES128, CipherMode: 1}},
		{"CA_SET_DESCR_DATA IV", "A5 00000007 40186F89 00 00000003 00000000 00000000 00000010 44564254 4D435054 41455343 49535341",
			Message{MsgID: 7, Opcode: OpCASetDescrData, Index: 3, DataType: DataIV, Data: []byte("DVBTMCPTAESCISSA")}},
		{"CA_SET_DESCR_DATA key", "A5 00000007 40186F89 00 00000003 00000001 00000001 00000008 1122336644556 6FF",
			Message{MsgID: 7, Opcode: OpCASetDescrData, Index: 3, Parity: 1, DataType: DataKey, Data: []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF}}},
		{"DMX_STOP", "A5 00000008 00006F2A 00 01 02 0500",
			Message{MsgID: 8, Opcode: OpDMXStop, Demux: 1, Filter: 2, PID: 0x500}},
		{"ECM_INFO", "A5 00000009 FFFF0003 00 0001 0B00 0500 00000000 000000C8 03 616263 00 00 01 78 02",
			Message{MsgID: 9, Opcode: OpECMInfo, ServiceID: 1, CAID: 0xB00, ECMPID: 0x500, ECMTime: 200}},
	}
	for _, c := range cases {
		m, err := ReadMessage(bytes.NewReader(unhex(t, c.in)))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if m.Opcode != c.want.Opcode || m.MsgID != c.want.MsgID || m.Adapter != c.want.Adapter || m.Version != c.want.Version ||
			m.Name != c.want.Name || m.PID != c.want.PID || m.Index != c.want.Index || m.Parity != c.want.Parity ||
			m.CW != c.want.CW || m.Algo != c.want.Algo || m.CipherMode != c.want.CipherMode || m.Demux != c.want.Demux ||
			m.Filter != c.want.Filter || m.ServiceID != c.want.ServiceID || m.CAID != c.want.CAID ||
			m.ECMPID != c.want.ECMPID || m.ECMTime != c.want.ECMTime || m.DataType != c.want.DataType || !bytes.Equal(m.Data, c.want.Data) {
			t.Errorf("%s: %+v\nwant %+v", c.name, m, c.want)
		}
	}
	// DMX_SET_FILTER: table 0x80 with mask 0xF0, as OSCam asks for ECMs.
	in := unhex(t, "A5 00000002 403C6F2B 00 00 03 0500"+
		"80"+strings.Repeat("00", 15)+"F0"+strings.Repeat("00", 15)+strings.Repeat("00", 16)+"00000000 00000001")
	m, err := ReadMessage(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if m.Opcode != OpDMXSetFilter || m.Filter != 3 || m.PID != 0x500 || m.Flags != 1 || m.Filt.Value[0] != 0x80 || m.Filt.Mask[0] != 0xF0 {
		t.Fatalf("DMX_SET_FILTER %+v", m)
	}
	if !m.Filt.Match([]byte{0x81, 0x70, 0}) || !m.Filt.Match([]byte{0x80, 0x70, 0}) || m.Filt.Match([]byte{0x90, 0x70, 0}) {
		t.Fatal("an ECM filter's matches are wrong")
	}
	// Errors: an unknown opcode, a message cut short, a CA_SET_DESCR_DATA too long.
	if _, err := ReadMessage(bytes.NewReader(unhex(t, "A5 00000001 12345678 00"))); !errors.Is(err, ErrFraming) {
		t.Errorf("unknown opcode: %v", err)
	}
	if _, err := ReadMessage(bytes.NewReader(unhex(t, "A5 00000001 40106F86 00 0000"))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut short: %v", err)
	}
	if _, err := ReadMessage(bytes.NewReader(unhex(t, "A5 00000001 40186F89 00 00000000 00000000 00000000 FFFFFFFF"))); err == nil {
		t.Error("a CA_SET_DESCR_DATA of 4 GB was accepted")
	}
}

func TestFilterModes(t *testing.T) {
	var f Filter
	f.Value[0], f.Mask[0] = 0x80, 0xFF
	f.Value[1], f.Mask[1], f.Mode[1] = 0x12, 0xFF, 0xFF // byte 3 must differ from 0x12
	if f.Match([]byte{0x80, 0, 0, 0x12}) || !f.Match([]byte{0x80, 0, 0, 0x13}) || f.Match([]byte{0x81, 0, 0, 0x13}) {
		t.Fatal("negative filter")
	}
	if f.Match([]byte{0x80}) {
		t.Fatal("a section shorter than the filter matched")
	}
}

// FuzzReadMessage reads any bytes as server messages: no panic, bounded data.
func FuzzReadMessage(f *testing.F) {
	f.Add(unhex(f, "A5 00000005 40106F86 00 00000001 00000001 11223366445566FF"))
	f.Add(unhex(f, "A5 00000000 FFFF0002 0003 05 4F5363616D"))
	f.Add(unhex(f, "A5 00000009 FFFF0003 00 0001 0B00 0500 00000000 000000C8 03 616263 00 00 01 78 02"))
	f.Add(unhex(f, "A5 00000001 40186F89 00 00000000 00000000 00000000 00000004 01020304"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for range 8 {
			m, err := ReadMessage(r)
			if err != nil {
				return
			}
			if len(m.Data) > maxDescrData || len(m.Name) > 255 {
				t.Fatalf("unbounded message %+v", m)
			}
		}
	})
}
