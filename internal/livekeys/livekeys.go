// Package livekeys is the source of keys that come while the stream runs: a key server that
// answers the stream's ECMs (cs378x, newcamd, DVBAPI), the stream's own ECMs of a test CA
// system, an ECM cache that answers them as a server did when it was recorded, or a key log
// that another program is still writing; it feeds the pipeline's LiveKeys and counts what the
// server (or the cache) did. A key server's answers may be appended to an ECM cache as they
// come.
package livekeys

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tsdescramble/tsdescramble/internal/report"
	"github.com/tsdescramble/tsdescramble/internal/runfiles"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/keyserver"
	"github.com/tsdescramble/tsdescramble/keyserver/cs378x"
	"github.com/tsdescramble/tsdescramble/keyserver/dvbapi"
	"github.com/tsdescramble/tsdescramble/keyserver/newcamd"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

// URL is a parsed -key-server URL.
type URL struct {
	scheme         string // cs378x, newcamd or dvbapi (ecm-xor: the stream's own ECMs; ecm-cache: a cache's answers)
	user, password string
	addr           string
	choice         keyserver.Choice
	desKey         []byte // newcamd's, nil for the default
	provider       uint32 // newcamd's provid=
}

// ParseURL reads a key server URL given by flag (named so in the errors). Its errors never show
// the URL, nor the values of its password and DES key.
func ParseURL(flag, s string) (*URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s: not a key server URL: want cs378x://USER:PASS@HOST:PORT, newcamd://USER:PASS@HOST:PORT or dvbapi://HOST:PORT", flag)
	}
	k := &URL{scheme: strings.ToLower(u.Scheme), addr: u.Host}
	if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
		return nil, fmt.Errorf("%s: the key server's address needs a port: HOST:PORT", flag)
	}
	switch k.scheme {
	case "cs378x", "newcamd":
		if u.User == nil || u.User.Username() == "" {
			return nil, fmt.Errorf("%s: %s needs a user and a password: %s://USER:PASS@HOST:PORT", flag, k.scheme, k.scheme)
		}
		k.user = u.User.Username()
		k.password, _ = u.User.Password()
		if err := k.options(flag, u.Query()); err != nil {
			return nil, err
		}
	case "dvbapi":
		if u.User != nil || u.RawQuery != "" {
			return nil, fmt.Errorf("%s: dvbapi takes no user, password or options: dvbapi://HOST:PORT", flag)
		}
	default:
		return nil, fmt.Errorf("%s: unknown key server protocol: want cs378x://, newcamd:// or dvbapi://", flag)
	}
	return k, nil
}

// options reads the query of a cs378x or newcamd URL.
func (k *URL) options(flag string, q url.Values) error {
	for name := range q {
		switch {
		case name == "caid" || name == "ecm-pid":
		case k.scheme == "newcamd" && (name == "key" || name == "provid"):
		case k.scheme == "newcamd":
			return fmt.Errorf("%s: unknown option %q: newcamd takes key=28HEXDIGITS, caid=HEX, provid=HEX and ecm-pid=PID", flag, name)
		default:
			return fmt.Errorf("%s: unknown option %q: cs378x takes caid=HEX and ecm-pid=PID", flag, name)
		}
	}
	if v := q.Get("caid"); v != "" {
		n, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(v), "0x"), 16, 16)
		if err != nil || n == 0 {
			return fmt.Errorf("%s: caid=%s: want the CA system id in hex, 0B00 for instance", flag, v)
		}
		k.choice.CAID = uint16(n)
	}
	if v := q.Get("ecm-pid"); v != "" {
		n, err := strconv.ParseUint(v, 0, 16)
		if err != nil || n == 0 || n > 0x1FFE {
			return fmt.Errorf("%s: ecm-pid=%s: want a PID from 1 to 0x1FFE, decimal or 0x hex", flag, v)
		}
		k.choice.ECMPID = uint16(n)
	}
	if v := q.Get("provid"); v != "" {
		n, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(v), "0x"), 16, 24)
		if err != nil {
			return fmt.Errorf("%s: provid=%s: want the provider id in hex, up to 6 digits, 000000 for instance", flag, v)
		}
		k.provider = uint32(n)
	}
	if q.Has("key") {
		// The key is a secret of the server's: the message never shows it.
		v := strings.Map(func(r rune) rune {
			if r == ' ' || r == ':' || r == '-' {
				return -1
			}
			return r
		}, q.Get("key"))
		key, err := hex.DecodeString(v)
		if err != nil || len(key) != newcamd.DESKeySize {
			return fmt.Errorf("%s: key: want the port's DES key in 28 hex digits (%s when the server names none)", flag, newcamd.DefaultDESKey)
		}
		k.desKey = key
	}
	return nil
}

// Source is a running key server client (or the follower of a growing log) and the pipeline's
// side of it.
type Source struct {
	url     *URL           // nil for -follow
	follow  string         // the -cw-file that -follow reads
	fl      *keys.Follower // its reader, for SIGHUP
	logf    func(string)   // the run's log, from start
	early   []string       // the followed log's bad lines read before start
	live    *keys.Live
	lk      *pipeline.LiveKeys
	feeder  *keyserver.Feeder
	cs      *cs378x.Client
	nc      *newcamd.Client
	dv      *dvbapi.Client
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	verbose bool // -v: a line for each ECM answered without a key

	cache    *keys.ECMCache       // the ECM cache that answers the ECMs, or nil
	recorder *keys.ECMCacheWriter // the ECM cache the server's answers are appended to, or nil
}

// Options say how a period waits for its key (-key-wait, -missing-key) and what the source
// says of itself.
type Options struct {
	Wait           time.Duration
	Drop, ShowKeys bool
	Verbose        bool   // a line for each ECM answered without a key
	Service        uint16 // the service whose ECMs are asked for, 0 for the first one found
	// Record, when set, is the ECM cache each answer of the key server is appended to.
	Record *keys.ECMCacheWriter
}

// Dial returns the client of the key server at u: nothing connects before Start.
func Dial(u *URL, o Options) *Source {
	// A request to the server never outlasts the wait of the period that needs its answer.
	timeout := min(keyserver.DefaultTimeout, o.Wait)
	switch u.scheme {
	case "cs378x":
		cs := cs378x.NewClient(cs378x.Config{Addr: u.addr, User: u.user, Password: u.password, Timeout: timeout})
		ks := NewECM(u, cs, u.choice, o)
		ks.cs = cs
		return ks
	case "newcamd":
		nc := newcamd.NewClient(newcamd.Config{Addr: u.addr, User: u.user, Password: u.password, DESKey: u.desKey,
			CAID: u.choice.CAID, ProviderID: u.provider, Timeout: timeout})
		ks := NewECM(u, nc, u.choice, o)
		ks.nc = nc
		return ks
	}
	ks := newSource(o)
	ks.url = u
	cfg := dvbapi.Config{Addr: u.addr, Timeout: timeout, ServiceID: o.Service}
	if o.Record != nil {
		cfg.Recorder = ks.cacheWriter(o.Record)
	}
	ks.dv = dvbapi.NewClient(cfg, ks.live)
	ks.lk.Sections = ks.dv
	return ks
}

// cacheWriter returns the Recorder that appends the server's answers to the ECM cache w, its
// failures said in the run's log.
func (ks *Source) cacheWriter(w *keys.ECMCacheWriter) keyserver.Recorder {
	ks.recorder = w
	return &keyserver.CacheWriter{W: w, Log: func(s string) {
		if ks.logf != nil {
			ks.logf(s)
		}
	}}
}

// FromCache returns the key source of a run whose ECMs the ECM cache c answers, as the key
// server did when c was recorded, without a server: each ECM is answered as it is read, so a
// file is read at its own speed, and a period whose ECM the cache does not hold has no key,
// known at once. A service's ECMs are taken from the ECM PID the cache was recorded from, if
// its PMT names it, else from its first CA descriptor.
func FromCache(c *keys.ECMCache, o Options) *Source {
	ks := NewECM(&URL{scheme: "ecm-cache"}, keyserver.Cache{C: c}, keyserver.Choice{Prefer: c.Holds}, o)
	ks.cache = c
	ks.lk.AtOnce, ks.lk.Origin = true, "the ECM cache"
	return ks
}

// ECMXor is the URL of keys that answer the stream's own ECMs (-ecm-xor), as the summary names
// them.
func ECMXor() *URL { return &URL{scheme: "ecm-xor"} }

// NewECM returns the key source of a run whose keys answer the stream's ECMs (a cs378x server,
// -ecm-xor on a pipe or a network input): the ECM PID as choice (with the service) names it,
// each distinct ECM answered by ans. url names the protocol in the summary.
func NewECM(url *URL, ans keyserver.Answerer, choice keyserver.Choice, o Options) *Source {
	ks := newSource(o)
	ks.url = url
	if url.scheme == "ecm-xor" {
		ks.lk.Origin = "the stream's ECMs"
	}
	if o.Record != nil {
		// Whatever the protocol: each answer, with its ECM, goes to the cache too.
		ans = keyserver.Recording(ans, ks.cacheWriter(o.Record))
	}
	ks.feeder = keyserver.NewFeeder(ks.live, ans)
	ks.verbose = o.Verbose
	if o.Service != 0 {
		choice.ServiceID = o.Service
	}
	ks.lk.Sections = keyserver.NewECMSink(ks.feeder, choice)
	return ks
}

func newSource(o Options) *Source {
	ks := &Source{live: keys.NewLive()}
	ks.lk = &pipeline.LiveKeys{Source: ks.live, Wait: o.Wait, ShowKeys: o.ShowKeys, Drop: o.Drop}
	return ks
}

// Follow returns the follower of the key log at path (-cw-file FILE -follow), a log that grows
// while the run reads, with the keys it holds already read. Its errors are the command's usage
// errors.
func Follow(path string, o Options) (*Source, error) {
	kf, err := loadWholeLines(path)
	switch {
	case errors.Is(err, keys.ErrEmptyList):
		// A log that has no key yet: its keys are still to come.
	case err != nil:
		var le *keys.LineError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("cannot read the CW file: %v", runfiles.UnwrapPath(err))
	case kf.Format == keys.FormatList:
		return nil, fmt.Errorf("-follow: %s is a list of control words, which has no parities to follow: follow an OSCam .cwl log or EVEN ODD pairs", path)
	}
	ks := newSource(o)
	ks.follow = path
	ks.lk.Origin = "the CW log"
	// Its bad lines go to the run's log, which start sets before the follower runs; those of the
	// first read, before that, wait for it.
	ks.fl = keys.NewFollower(path, keys.CWSize, ks.live, func(err error) {
		if ks.logf == nil {
			ks.early = append(ks.early, err.Error())
			return
		}
		ks.logf(err.Error())
	})
	// The keys the log holds are set now, before the input is opened: a first read left to the
	// follower's goroutine could come after the next key was appended, and take only that one.
	if err := ks.fl.Poll(); err != nil {
		return nil, fmt.Errorf("cannot read the CW file: %v", runfiles.UnwrapPath(err))
	}
	return ks, nil
}

// LiveKeys is the pipeline's side of the source.
func (ks *Source) LiveKeys() *pipeline.LiveKeys { return ks.lk }

// Follows reports whether the source follows a growing log, which SIGHUP rereads (Reread).
func (ks *Source) Follows() bool { return ks.fl != nil }

// AnswersAtOnce reports whether the source answers from the stream itself (-ecm-xor) or from an
// ECM cache, at once.
func (ks *Source) AnswersAtOnce() bool {
	return ks.url != nil && (ks.url.scheme == "ecm-xor" || ks.url.scheme == "ecm-cache")
}

// loadWholeLines reads the key file at path as far as its last newline: the line after it is
// still being written by the program that keeps the log, and the follower reads it once whole.
// Checked whole, it was refused as a bad line and the run did not start.
func loadWholeLines(path string) (*keys.KeyFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return keys.ReadKeyFile(bytes.NewReader(data[:bytes.LastIndexByte(data, '\n')+1]), path, keys.CWSize)
}

// Start runs the client until Stop; file says the input is a file, read ahead of real time.
// logf gets the lines of what goes wrong while it runs: crypto periods without a key, keys that
// do not fit, the server's failures, bad lines of a followed log.
func (ks *Source) Start(ctx context.Context, file bool, logf func(string)) {
	ks.lk.FileInput, ks.lk.Log, ks.logf = file, logf, logf
	if ks.url != nil && ks.lk.Sections != nil {
		// A stream without an ECM for the server would have every crypto period say it got
		// no key: one line says why instead.
		var told atomic.Bool
		ks.lk.Log = func(line string) {
			if !ks.noECMPID() {
				logf(line)
			} else if !told.Swap(true) {
				logf(noECMLine)
			}
		}
	}
	for _, l := range ks.early {
		logf(l)
	}
	ks.early = nil
	if ks.feeder != nil && ks.verbose {
		ks.feeder.SetLog(logf)
	}
	if ks.dv != nil {
		// A descrambling mode or key the client refuses, said once: the periods it leaves
		// without a key say nothing of why.
		ks.dv.SetLog(logf)
	}
	ctx, ks.cancel = context.WithCancel(ctx)
	ks.wg.Add(1)
	go func() {
		defer ks.wg.Done()
		switch {
		case ks.feeder != nil:
			if ks.nc != nil {
				// Logged in before the stream's first ECM comes, its answer comes a login sooner;
				// the ECMs offered meanwhile wait in the feeder's queue.
				ks.nc.Connect(ctx)
			}
			ks.feeder.Run(ctx)
		case ks.dv != nil:
			ks.dv.Run(ctx)
		case ks.fl != nil:
			err := ks.fl.Run(ctx, 200*time.Millisecond)
			if err != nil && ctx.Err() == nil {
				logf(fmt.Sprintf("-follow: %v: no more keys are read", runfiles.UnwrapPath(err)))
			}
		}
	}()
}

// Reread reads the followed -cw-file again from its start (SIGHUP): the keys already applied
// stay, those new to the file join.
func (ks *Source) Reread(logf func(string)) {
	logf("SIGHUP: reading " + ks.follow + " again from its start")
	ks.fl.Reread(func(n int, err error) {
		if err != nil {
			return // the follower stops, and says why (Start)
		}
		logf(fmt.Sprintf("SIGHUP: %s read again: %s; each key applies from the next crypto period of its parity", ks.follow, report.Plural(n, "key line")))
	})
}

// Stop ends the client and fills in its counts; a client whose answers go to an ECM cache first
// waits, up to the key wait, for the answers to the ECMs it has sent.
func (ks *Source) Stop(st *pipeline.Stats) {
	if ks.recorder != nil && ks.lk.Sections != nil {
		// The ECMs of the input's end are still with the server when a file has been read:
		// their answers belong in the cache too, as a live stream's would have come. The
		// wait is bounded as a period's is.
		for start := time.Now(); ks.lk.Sections.Busy() && time.Since(start) < ks.lk.Wait; {
			time.Sleep(5 * time.Millisecond)
		}
	}
	ks.cancel()
	ks.wg.Wait()
	if ks.cs != nil {
		ks.cs.Close()
	}
	if ks.nc != nil {
		ks.nc.Close()
	}
	if st.LiveKeys == nil || ks.url == nil {
		return
	}
	var counts keyserver.Stats
	switch {
	case ks.feeder != nil:
		counts = ks.feeder.Stats()
	case ks.dv != nil:
		counts = ks.dv.Stats().Stats
	}
	st.LiveKeys.SetServer(ks.url.scheme, counts)
	switch {
	case ks.cache != nil:
		cs := ks.cache.Stats()
		st.LiveKeys.ECMCache = &cs
	case ks.recorder != nil:
		cs := ks.recorder.Stats()
		st.LiveKeys.ECMCache = &cs
	}
}

// ServerStats returns the counts of the key server's client so far, and the protocol it
// speaks; ok is false for a source without a server (a followed log). Safe while the run goes.
func (ks *Source) ServerStats() (protocol string, st keyserver.Stats, ok bool) {
	if ks.url == nil {
		return "", st, false
	}
	switch {
	case ks.feeder != nil:
		st = ks.feeder.Stats()
	case ks.dv != nil:
		st = ks.dv.Stats().Stats
	default:
		return "", st, false
	}
	return ks.url.scheme, st, true
}

// ServerState returns where the connection to the key server stands, with the protocol and the
// server's HOST:PORT (no user or password); ok is false for a source without a connection of its
// own (a followed log, the stream's ECMs, an ECM cache). Safe while the run goes.
func (ks *Source) ServerState() (protocol, server string, state keyserver.ConnState, ok bool) {
	switch {
	case ks.cs != nil:
		state = ks.cs.State()
	case ks.nc != nil:
		state = ks.nc.State()
	case ks.dv != nil:
		state = ks.dv.State()
	default:
		return "", "", state, false
	}
	return ks.url.scheme, ks.url.addr, state, true
}

// noECMLine says once why no period of a stream without ECMs gets a key from a server.
const noECMLine = "the stream carries no ECM for the key server: no CA descriptor (ECM PID) in the PMT of the services chosen, so its crypto periods pass scrambled (-service, caid= and ecm-pid= choose; a stream without ECMs takes its keys from -cw, -cw-file or -biss)"

// noECMPID reports whether the stream's tables name no ECM PID for the key server (of the
// services and CA system chosen): a server then has nothing to answer.
func (ks *Source) noECMPID() bool {
	c, ok := ks.lk.Sections.(interface{ ECMPIDs() int })
	return ok && c.ECMPIDs() == 0
}

// lastError returns why the key server gave no key, if it said.
func (ks *Source) lastError() error {
	switch {
	case ks.feeder != nil:
		return ks.feeder.LastError()
	case ks.dv != nil:
		return ks.dv.LastError()
	}
	return nil
}

// Judge is report.JudgeKeys for keys from a key server: periods whose key did not come in
// time make the run a failure (exit 3), and the line says why, with the server's last error.
func (ks *Source) Judge(st *pipeline.Stats) report.Verdict {
	lk := st.LiveKeys
	if lk == nil || lk.GaveUp == 0 {
		return report.Verdict{}
	}
	why := ""
	if err := ks.lastError(); err != nil {
		why = " (the key server's last answer: " + err.Error() + ")"
	}
	what := report.Plural(int(lk.PassedNoKey), "packet") + " passed scrambled"
	if ks.lk.Drop {
		what = fmt.Sprintf("%s dropped, %d passed scrambled", report.Plural(int(lk.Dropped), "packet"), lk.PassedNoKey)
	}
	periods := report.Plural(int(lk.GaveUp), "crypto period")
	if ks.cache != nil {
		return report.Verdict{NoFit: true, Line: fmt.Sprintf("%s got no key from the ECM cache %s: %s; %s",
			periods, ks.cache.Name, what, cacheMisses(ks.cache.Stats()))}
	}
	source := "the key server"
	if ks.url == nil {
		source = ks.follow
	} else if ks.lk.Sections != nil && ks.noECMPID() {
		return report.Verdict{NoFit: true, Line: fmt.Sprintf("%s got no key: %s", periods, noECMLine)}
	}
	return report.Verdict{NoFit: true, Line: fmt.Sprintf("%s got no key from %s within -key-wait %s: %s%s",
		periods, source, ks.lk.Wait, what, why)}
}

// cacheMisses says what the stream's ECMs found in an ECM cache, for a run in which periods
// got no key from it.
func cacheMisses(cs keys.ECMCacheStats) string {
	switch {
	case cs.Hits == 0 && cs.Misses == 0:
		return "the stream carried no ECM on the ECM PIDs of its CA descriptors"
	case cs.Hits == 0:
		return fmt.Sprintf("it holds none of the stream's %s: it was recorded from another stream (or service), or the ECMs were not answered then",
			report.Plural(int(cs.Misses), "distinct ECM"))
	}
	return fmt.Sprintf("%d of the stream's %d distinct ECMs are not in it (not answered with a key when it was recorded, or a line torn)",
		cs.Misses, cs.Hits+cs.Misses)
}
