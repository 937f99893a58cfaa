//go:build dvbcsa

package camdouble_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/testsupport/camdouble"
	"github.com/tsdescramble/tsdescramble/internal/testsupport/dvbcsa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/keyserver/cs378x"
	"github.com/tsdescramble/tsdescramble/keyserver/dvbapi"
	"github.com/tsdescramble/tsdescramble/keyserver/newcamd"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

// A stream with ECMs scrambled by libdvbcsa, each period with the CW its ECM carries, comes
// out clear byte for byte through each key server protocol.
func TestKeyServersOnLibdvbcsaStream(t *testing.T) {
	cws := [][]byte{
		{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xFF},
		{0xA1, 0xB2, 0xC3, 0x16, 0xD4, 0xE5, 0xF6, 0xAF},
		{0x01, 0x02, 0x03, 0x06, 0x04, 0x05, 0x06, 0x0F},
		{0x7F, 0x6E, 0x5D, 0x4A, 0x3C, 0x2B, 0x1A, 0x81},
		{0x10, 0x20, 0x30, 0x60, 0x40, 0x50, 0x60, 0xF0},
	}
	encrypt := func(cw, payload []byte) {
		k, err := dvbcsa.NewKey(cw)
		if err != nil {
			t.Fatal(err)
		}
		defer k.Free()
		k.Encrypt(payload)
	}
	spec := camdouble.StreamSpec{Packets: 8000, PeriodPackets: 700, CWs: cws, LeadPackets: 200, Encrypt: encrypt}
	clear, scrambled, ecms := camdouble.ECMStream(spec)
	spec.Encrypt = nil
	if _, ours, _ := camdouble.ECMStream(spec); !bytes.Equal(ours, scrambled) {
		t.Fatal("this project's CSA2 scrambles the stream differently from libdvbcsa")
	}
	background := func(f func(ctx context.Context)) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { f(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	run := func(t *testing.T, lk *pipeline.LiveKeys) pipeline.Stats {
		var out bytes.Buffer
		st, err := pipeline.Run(context.Background(), ts.NewSource(bytes.NewReader(scrambled)), &out, pipeline.Options{LiveKeys: lk})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), clear) {
			t.Fatalf("output differs from the clear stream: %+v", *st.LiveKeys)
		}
		return st
	}
	t.Run("cs378x", func(t *testing.T) {
		srv := camdouble.NewCS378x(t, "u", "p")
		live := keys.NewLive()
		cl := cs378x.NewClient(cs378x.Config{Addr: srv.Addr, User: "u", Password: "p"})
		defer cl.Close()
		f := keyserver.NewFeeder(live, cl)
		background(f.Run)
		run(t, &pipeline.LiveKeys{Source: live, Sections: keyserver.NewECMSink(f, keyserver.Choice{}), FileInput: true})
		if st := f.Stats(); st.Sent != int64(len(ecms)) {
			t.Fatalf("%d ECMs sent for %d", st.Sent, len(ecms))
		}
	})
	t.Run("newcamd", func(t *testing.T) {
		srv := camdouble.NewNewcamd(t, "u", "p", nil, camdouble.TestCAID)
		live := keys.NewLive()
		cl := newcamd.NewClient(newcamd.Config{Addr: srv.Addr, User: "u", Password: "p"})
		defer cl.Close()
		f := keyserver.NewFeeder(live, cl)
		background(f.Run)
		run(t, &pipeline.LiveKeys{Source: live, Sections: keyserver.NewECMSink(f, keyserver.Choice{}), FileInput: true})
		if st := f.Stats(); st.Sent != int64(len(ecms)) {
			t.Fatalf("%d ECMs sent for %d", st.Sent, len(ecms))
		}
	})
	t.Run("dvbapi", func(t *testing.T) {
		srv := camdouble.NewDVBAPI(t)
		live := keys.NewLive()
		cl := dvbapi.NewClient(dvbapi.Config{Addr: srv.Addr}, live)
		background(func(ctx context.Context) { cl.Run(ctx) })
		run(t, &pipeline.LiveKeys{Source: live, Sections: cl, FileInput: true, Wait: 2 * time.Second})
	})
}
