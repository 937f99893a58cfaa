//go:build srt && cgo

package srt

/*
#cgo pkg-config: srt
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <srt/srt.h>

// The library logs to stderr by default; the command says what matters in one line of its
// own, and a rejected handshake must not print a second.
static void tsd_nolog(void* opaque, int level, const char* file, int line, const char* area, const char* message) {
	(void)opaque; (void)level; (void)file; (void)line; (void)area; (void)message;
}

static int tsd_startup(void) {
	if (srt_startup() < 0) return -1;
	srt_setloghandler(NULL, tsd_nolog);
	return 0;
}

// tsd_io carries what a call returns besides its result, in C memory allocated once per
// socket, so that the calls of the hot path pass no Go pointer that would escape.
typedef struct {
	int err;                // the library's error code when a call stopped on an error, else 0
	int msgs, pkts;         // messages and 188-byte units a receive took
	int family, port;       // an accepted caller's address
	unsigned char ip[16];
	char text[200];         // the text of err
} tsd_io;

static void tsd_seterr(tsd_io* io, int e) {
	io->err = e;
	const char* s = srt_strerror(e, 0);
	strncpy(io->text, s ? s : "", sizeof io->text - 1);
	io->text[sizeof io->text - 1] = 0;
}

// tsd_socket makes a live-mode socket that never blocks, with the address's options.
// SRTO_TRANSTYPE goes first: it resets the options it governs.
static SRTSOCKET tsd_socket(tsd_io* io, int latency, const char* pass, int pbkeylen, const char* sid, int v6only) {
	SRTSOCKET s = srt_create_socket();
	if (s == SRT_INVALID_SOCK) {
		tsd_seterr(io, srt_getlasterror(NULL));
		return s;
	}
	int live = SRTT_LIVE, no = 0;
	if (srt_setsockflag(s, SRTO_TRANSTYPE, &live, sizeof live) < 0 ||
	    srt_setsockflag(s, SRTO_RCVSYN, &no, sizeof no) < 0 ||
	    srt_setsockflag(s, SRTO_SNDSYN, &no, sizeof no) < 0 ||
	    (latency >= 0 && srt_setsockflag(s, SRTO_LATENCY, &latency, sizeof latency) < 0) ||
	    (pass && srt_setsockflag(s, SRTO_PASSPHRASE, pass, (int)strlen(pass)) < 0) ||
	    (pbkeylen > 0 && srt_setsockflag(s, SRTO_PBKEYLEN, &pbkeylen, sizeof pbkeylen) < 0) ||
	    (sid && srt_setsockflag(s, SRTO_STREAMID, sid, (int)strlen(sid)) < 0) ||
	    (v6only >= 0 && srt_setsockflag(s, SRTO_IPV6ONLY, &v6only, sizeof v6only) < 0)) {
		tsd_seterr(io, srt_getlasterror(NULL));
		srt_close(s);
		return SRT_INVALID_SOCK;
	}
	return s;
}

static int tsd_sockaddr(struct sockaddr_storage* ss, int family, const unsigned char* ip, int port) {
	memset(ss, 0, sizeof *ss);
	if (family == 4) {
		struct sockaddr_in* a = (struct sockaddr_in*)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		memcpy(&a->sin_addr, ip, 4);
		return sizeof *a;
	}
	struct sockaddr_in6* a = (struct sockaddr_in6*)ss;
	a->sin6_family = AF_INET6;
	a->sin6_port = htons((uint16_t)port);
	memcpy(&a->sin6_addr, ip, 16);
	return sizeof *a;
}

static int tsd_listen(SRTSOCKET s, tsd_io* io, int family, const unsigned char* ip, int port) {
	struct sockaddr_storage ss;
	int n = tsd_sockaddr(&ss, family, ip, port);
	if (srt_bind(s, (struct sockaddr*)&ss, n) < 0 || srt_listen(s, 4) < 0) {
		tsd_seterr(io, srt_getlasterror(NULL));
		return -1;
	}
	return 0;
}

static int tsd_connect(SRTSOCKET s, tsd_io* io, int family, const unsigned char* ip, int port) {
	struct sockaddr_storage ss;
	int n = tsd_sockaddr(&ss, family, ip, port);
	if (srt_connect(s, (struct sockaddr*)&ss, n) < 0) {
		tsd_seterr(io, srt_getlasterror(NULL));
		return -1;
	}
	return 0;
}

// tsd_epoll makes an epoll set that watches s for events.
static int tsd_epoll(SRTSOCKET s, int events) {
	int eid = srt_epoll_create();
	if (eid < 0) return -1;
	if (srt_epoll_add_usock(eid, s, &events) < 0) {
		srt_epoll_release(eid);
		return -1;
	}
	return eid;
}

static int tsd_watch(int eid, SRTSOCKET s, int events) {
	return srt_epoll_update_usock(eid, s, &events);
}

// tsd_wait returns the events of the set's socket within ms milliseconds, 0 when none came.
static int tsd_wait(int eid, int64_t ms) {
	SRT_EPOLL_EVENT ev;
	if (srt_epoll_uwait(eid, &ev, 1, ms) <= 0) return 0; // an error shows at the next call
	return ev.events;
}

// tsd_accept takes a caller from the listener l, waiting up to ms for one.
static SRTSOCKET tsd_accept(SRTSOCKET l, int eid, int64_t ms, tsd_io* io) {
	io->err = 0;
	for (int waited = 0;; waited = 1) {
		struct sockaddr_storage ss;
		int n = sizeof ss;
		SRTSOCKET s = srt_accept(l, (struct sockaddr*)&ss, &n);
		if (s != SRT_INVALID_SOCK) {
			io->family = 0;
			if (ss.ss_family == AF_INET) {
				struct sockaddr_in* a = (struct sockaddr_in*)&ss;
				io->family = 4;
				io->port = ntohs(a->sin_port);
				memcpy(io->ip, &a->sin_addr, 4);
			} else if (ss.ss_family == AF_INET6) {
				struct sockaddr_in6* a = (struct sockaddr_in6*)&ss;
				io->family = 6;
				io->port = ntohs(a->sin6_port);
				memcpy(io->ip, &a->sin6_addr, 16);
			}
			return s;
		}
		int e = srt_getlasterror(NULL);
		if (e != SRT_EASYNCRCV) {
			tsd_seterr(io, e);
			return SRT_INVALID_SOCK;
		}
		if (waited || ms <= 0 || tsd_wait(eid, ms) == 0) return SRT_INVALID_SOCK;
	}
}

// tsd_recv receives messages into buf until it has no room for another or none is waiting,
// waiting up to ms for the first: one call from Go per wake-up, whatever the rate.
static int tsd_recv(SRTSOCKET s, int eid, char* buf, int cap, int64_t ms, tsd_io* io) {
	int off = 0, waited = 0;
	io->err = 0;
	io->msgs = 0;
	io->pkts = 0;
	while (cap - off >= SRT_LIVE_MAX_PLSIZE) {
		int n = srt_recvmsg(s, buf + off, cap - off);
		if (n > 0) {
			off += n;
			io->msgs++;
			io->pkts += n / 188;
			continue;
		}
		int e = n == 0 ? SRT_ECONNLOST : srt_getlasterror(NULL);
		if (e != SRT_EASYNCRCV) {
			tsd_seterr(io, e);
			break;
		}
		if (off > 0 || waited || ms <= 0) break;
		waited = 1;
		if (tsd_wait(eid, ms) == 0) break;
	}
	return off;
}

// tsd_send sends len bytes of b in messages of size bytes (the last may be shorter) without
// waiting; it stops at a full send buffer, or at an error it leaves in io.
static int tsd_send(SRTSOCKET s, const char* b, int len, int size, tsd_io* io) {
	int off = 0;
	io->err = 0;
	while (off < len) {
		int n = len - off < size ? len - off : size;
		if (srt_sendmsg(s, b + off, n, -1, 0) < 0) {
			int e = srt_getlasterror(NULL);
			if (e != SRT_EASYNCSND) tsd_seterr(io, e);
			break;
		}
		off += n;
	}
	return off;
}

static int tsd_connected(SRTSOCKET s) { return srt_getsockstate(s) == SRTS_CONNECTED; }

static int tsd_failed(SRTSOCKET s) {
	SRT_SOCKSTATUS st = srt_getsockstate(s);
	return st == SRTS_BROKEN || st == SRTS_CLOSING || st == SRTS_CLOSED || st == SRTS_NONEXIST;
}

// tsd_peerlatency returns the latency the peer delivers with, in milliseconds, as the
// handshake settled it, or -1.
static int tsd_peerlatency(SRTSOCKET s) {
	int ms = -1, n = sizeof ms;
	if (srt_getsockflag(s, SRTO_PEERLATENCY, &ms, &n) < 0) return -1;
	return ms;
}

static int tsd_unsent(SRTSOCKET s) {
	size_t blocks = 0, bytes = 0;
	if (srt_getsndbuffer(s, &blocks, &bytes) < 0) return 0;
	return (int)blocks;
}

// tsd_link holds the counts of srt_bstats, summed over both directions: a connection carries
// data one way, so the other's are zero.
typedef struct {
	int64_t lost, retrans, drop, undecrypt;
	double rtt;
} tsd_link;

static int tsd_stats(SRTSOCKET s, tsd_link* l) {
	SRT_TRACEBSTATS p;
	if (srt_bstats(s, &p, 0) < 0) return -1;
	l->lost = (int64_t)p.pktSndLossTotal + p.pktRcvLossTotal;
	l->retrans = (int64_t)p.pktRetransTotal + p.pktRcvRetrans; // not cleared: since the start
	l->drop = (int64_t)p.pktSndDropTotal + p.pktRcvDropTotal;
	l->undecrypt = p.pktRcvUndecryptTotal;
	l->rtt = p.msRTT;
	return 0;
}

static const char* tsd_reject(SRTSOCKET s) { return srt_rejectreason_str(srt_getrejectreason(s)); }
static int tsd_rejectcode(SRTSOCKET s) { return srt_getrejectreason(s); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
	"unsafe"
)

// Built reports whether this build has SRT: it was built with the srt tag and cgo.
const Built = true

// LibraryVersion returns the version of the SRT library this build runs, "1.5.1", or "" in
// a build without SRT.
func LibraryVersion() string {
	v := uint32(C.srt_getversion())
	return fmt.Sprintf("%d.%d.%d", v>>16, v>>8&0xff, v&0xff)
}

// library is what Open and NewWriter connect through: libsrt.
var library transport = libsrt{}

var started struct {
	once sync.Once
	err  error
}

// startup starts the library once per process; it is never cleaned up, since sockets may live
// as long as the process.
func startup() error {
	started.once.Do(func() {
		if C.tsd_startup() < 0 {
			started.err = errors.New("the SRT library did not start")
		}
	})
	return started.err
}

type libsrt struct{}

// sock is one SRT socket: a connection, or a listener's.
type sock struct {
	s   C.SRTSOCKET
	eid C.int
	io  *C.tsd_io
}

// newSock makes a socket with a's options; v6only is -1 to leave SRTO_IPV6ONLY alone.
func newSock(a *Address, v6only int) (*sock, error) {
	if err := startup(); err != nil {
		return nil, err
	}
	io := (*C.tsd_io)(C.calloc(1, C.sizeof_tsd_io))
	var pass, sid *C.char
	if a.Passphrase != "" {
		pass = C.CString(a.Passphrase)
		defer func() {
			C.memset(unsafe.Pointer(pass), 0, C.size_t(len(a.Passphrase))) // no copy of it left behind
			C.free(unsafe.Pointer(pass))
		}()
	}
	if a.StreamID != "" {
		sid = C.CString(a.StreamID)
		defer C.free(unsafe.Pointer(sid))
	}
	s := C.tsd_socket(io, C.int(a.Latency), pass, C.int(a.KeyLength), sid, C.int(v6only))
	if s < 0 {
		err := errors.New(C.GoString(&io.text[0]))
		C.free(unsafe.Pointer(io))
		return nil, err
	}
	return &sock{s: s, eid: -1, io: io}, nil
}

func (k *sock) lastError() string { return C.GoString(&k.io.text[0]) }

// resolve returns the address of host, an IPv4 one when it has both.
func resolve(ctx context.Context, host string) (netip.Addr, error) {
	if host == "" {
		return netip.IPv4Unspecified(), nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap(), nil
	}
	for _, network := range []string{"ip4", "ip"} {
		if ips, err := net.DefaultResolver.LookupNetIP(ctx, network, host); err == nil && len(ips) > 0 {
			return ips[0].Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("cannot resolve %s", host)
}

// cAddr returns the family (4 or 6) and the 16 bytes of ip in C memory, for a call.
func cAddr(ip netip.Addr) (C.int, *C.uchar, func()) {
	b := ip.As16()
	family := C.int(6)
	if ip.Is4() {
		family = 4
		a := ip.As4()
		copy(b[:], a[:])
	}
	p := (*C.uchar)(C.CBytes(b[:]))
	return family, p, func() { C.free(unsafe.Pointer(p)) }
}

func (libsrt) dial(ctx context.Context, a *Address) (conn, error) {
	ip, err := resolve(ctx, a.Host)
	if err != nil {
		return nil, &ConnectError{Addr: a.String(), Reason: err.Error()}
	}
	k, err := newSock(a, -1)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", a, err)
	}
	if k.eid = C.tsd_epoll(k.s, C.SRT_EPOLL_OUT|C.SRT_EPOLL_ERR); k.eid < 0 {
		k.close()
		return nil, fmt.Errorf("%s: the SRT library cannot watch a socket", a)
	}
	family, cip, free := cAddr(ip)
	rc := C.tsd_connect(k.s, k.io, family, cip, C.int(a.Port))
	free()
	if rc < 0 {
		msg := k.lastError()
		k.close()
		return nil, &ConnectError{Addr: a.String(), Reason: msg}
	}
	// The connection is made in the library's threads; its state is looked at each poll, so
	// that a Close (ctx) is seen while the library waits for the listener's answer.
	for {
		C.tsd_wait(k.eid, C.int64_t(poll/time.Millisecond))
		if ctx.Err() != nil {
			k.close()
			return nil, ctx.Err()
		}
		if C.tsd_connected(k.s) != 0 {
			C.tsd_watch(k.eid, k.s, C.SRT_EPOLL_IN|C.SRT_EPOLL_ERR)
			return k, nil
		}
		if C.tsd_failed(k.s) != 0 {
			reason := rejectReason(int(C.tsd_rejectcode(k.s)), C.GoString(C.tsd_reject(k.s)), a)
			k.close()
			return nil, &ConnectError{Addr: a.String(), Reason: reason}
		}
	}
}

// rejectReason says why a call failed, with what to do for the reasons users meet (srt.h's
// SRT_REJ_* codes), and the library's own words for the others.
func rejectReason(code int, text string, a *Address) string {
	switch code {
	case C.SRT_REJ_BADSECRET:
		return "the listener has another passphrase (SRT: wrong password)"
	case C.SRT_REJ_UNSECURE:
		if a.Passphrase == "" {
			return "the listener wants a passphrase: give passphrase= (SRT: password required)"
		}
		return "the listener has no passphrase: leave passphrase= out (SRT: password unexpected)"
	case C.SRT_REJ_TIMEOUT:
		return fmt.Sprintf("no answer (SRT: connection timeout): check that a listener runs at %s:%d and that UDP reaches it", a.Host, a.Port)
	case C.SRT_REJ_PEER:
		return "the listener refused the connection (SRT: rejected by peer): it may serve another caller, or not this streamid="
	}
	return "SRT: " + text
}

func (libsrt) listen(a *Address) (listener, error) {
	ip, err := resolve(context.Background(), a.Host)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", a, err)
	}
	v6only := -1
	if ip.Is6() && ip.IsUnspecified() {
		v6only = 0 // [::] takes IPv4 callers too
	}
	k, err := newSock(a, v6only)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", a, err)
	}
	family, cip, free := cAddr(ip)
	rc := C.tsd_listen(k.s, k.io, family, cip, C.int(a.Port))
	free()
	if rc < 0 {
		msg := k.lastError()
		k.close()
		return nil, fmt.Errorf("%s: cannot listen: %s; check that the port is free and the address is this machine's", a, msg)
	}
	if k.eid = C.tsd_epoll(k.s, C.SRT_EPOLL_IN|C.SRT_EPOLL_ERR); k.eid < 0 {
		k.close()
		return nil, fmt.Errorf("%s: the SRT library cannot watch a socket", a)
	}
	return k, nil
}

// accept takes a caller of a listener's socket.
func (k *sock) accept(wait time.Duration) (conn, string, error) {
	s := C.tsd_accept(k.s, k.eid, C.int64_t(wait/time.Millisecond), k.io)
	if s < 0 {
		if k.io.err != 0 {
			return nil, "", errors.New("accepting a caller: " + k.lastError())
		}
		return nil, "", nil
	}
	var peer string
	ipb := C.GoBytes(unsafe.Pointer(&k.io.ip[0]), 16)
	switch k.io.family {
	case 4:
		peer = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ipb[:4])), uint16(k.io.port)).String()
	case 6:
		peer = netip.AddrPortFrom(netip.AddrFrom16([16]byte(ipb)).Unmap(), uint16(k.io.port)).String()
	}
	c := &sock{s: s, eid: -1, io: (*C.tsd_io)(C.calloc(1, C.sizeof_tsd_io))}
	if c.eid = C.tsd_epoll(s, C.SRT_EPOLL_IN|C.SRT_EPOLL_ERR); c.eid < 0 {
		c.close()
		return nil, "", errors.New("the SRT library cannot watch a socket")
	}
	return c, peer, nil
}

func (k *sock) recv(b []byte, wait time.Duration) (n, msgs, pkts int, err error) {
	m := C.tsd_recv(k.s, k.eid, (*C.char)(unsafe.Pointer(&b[0])), C.int(len(b)), C.int64_t(wait/time.Millisecond), k.io)
	if k.io.err != 0 {
		err = fmt.Errorf("%w (SRT: %s)", errLost, k.lastError())
	}
	return int(m), int(k.io.msgs), int(k.io.pkts), err
}

func (k *sock) send(b []byte, size int) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n := int(C.tsd_send(k.s, (*C.char)(unsafe.Pointer(&b[0])), C.int(len(b)), C.int(size), k.io))
	if k.io.err != 0 {
		return n, fmt.Errorf("%w (SRT: %s)", errLost, k.lastError())
	}
	return n, nil
}

func (k *sock) connected() bool { return C.tsd_connected(k.s) != 0 }

func (k *sock) unsent() int { return int(C.tsd_unsent(k.s)) }

func (k *sock) peerLatency() time.Duration {
	ms := int(C.tsd_peerlatency(k.s))
	if ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

func (k *sock) stats() linkStats {
	var l C.tsd_link
	if C.tsd_stats(k.s, &l) < 0 {
		return linkStats{}
	}
	return linkStats{Lost: int64(l.lost), Retransmitted: int64(l.retrans), Dropped: int64(l.drop), Undecrypted: int64(l.undecrypt), RTT: float64(l.rtt)}
}

// close closes the socket and frees what it holds; its owner calls it once.
func (k *sock) close() {
	if k.eid >= 0 {
		C.srt_epoll_release(k.eid)
		k.eid = -1
	}
	C.srt_close(k.s)
	if k.io != nil {
		C.free(unsafe.Pointer(k.io))
		k.io = nil
	}
}
