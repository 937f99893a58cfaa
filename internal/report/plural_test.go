package report

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/live"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/relay"
	"github.com/tsdescramble/tsdescramble/srt"
	"github.com/tsdescramble/tsdescramble/web"
)

// ones sets every integer and duration field of the struct v points to, and of the structs
// and pointers to structs it holds, to 1 (a pointer is given a struct of its own).
func ones(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(1)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(1)
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.Struct:
			ones(f)
		case reflect.Pointer:
			if f.Type().Elem().Kind() == reflect.Struct {
				f.Set(reflect.New(f.Type().Elem()))
				ones(f.Elem())
			}
		}
	}
}

// countOfOne finds a count of 1 with its noun in the plural: "1 packets", "1 crypto periods".
var countOfOne = regexp.MustCompile(`(^|[^0-9.,/])1 ([a-zA-Z-]+ )?(packets|bytes|datagrams|duplicates|jumps|senders|reconnections|resumes|connections|segments|reloads|clients|messages|callers|times|ECMs|CWs|answers|periods|jobs|sections|replies|PCRs|discontinuities|lines|words|PIDs|payloads|changes)\b`)

// Every line of the summary, with every count at 1, writes its nouns in the singular.
func TestSummaryCountsOfOne(t *testing.T) {
	var st pipeline.Stats
	ones(reflect.ValueOf(&st).Elem())
	st.LiveKeys = &pipeline.LiveKeyStats{}
	ones(reflect.ValueOf(st.LiveKeys).Elem())
	st.LiveKeys.Server.Protocol = "cs378x"
	st.LiveKeys.ECMCache = &keys.ECMCacheStats{Mode: "read"}
	ones(reflect.ValueOf(st.LiveKeys.ECMCache).Elem())
	st.PIDs = []pipeline.PIDStats{{}}
	ones(reflect.ValueOf(&st.PIDs[0]).Elem())
	st.LiveKeys.Server.Applied = []pipeline.AppliedCWs{{PID: 0x100, Periods: 1}}
	ls := &Live{In: &live.Stats{}, Out: &live.WriterStats{}, Web: &web.Stats{}, Relay: &relay.Stats{}, SRTIn: &srt.Stats{}, SRTOut: &srt.WriterStats{}}
	ones(reflect.ValueOf(ls).Elem())
	st.Elapsed = time.Second

	var b strings.Builder
	for _, mode := range []pipeline.Mode{pipeline.Descramble, pipeline.Scramble, pipeline.Rescramble, pipeline.Passthrough} {
		Summary(&b, &st, mode, true, JudgeKeys(&st))
	}
	PrintLive(&b, ls)
	KeyServerSummary(&b, &st, true)
	st.LiveKeys.ECMCache.Mode = "write"
	KeyServerSummary(&b, &st, true)
	out := b.String()
	for _, want := range []string{"1 packet in", "input: 1 datagram,", "HTTP output: 1 client served", "1 reconnection", "2 distinct ECMs of the stream"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary has no %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		for _, m := range countOfOne.FindAllString(l, -1) {
			t.Errorf("%q in %q", strings.TrimLeft(m, " ;(,:"), l)
		}
	}
}
