// Package srt carries transport streams over SRT, the Secure Reliable Transport protocol
// (Haivision's, published as draft-sharabayko-srt), in its live mode: a Reader that receives a
// stream and a Writer that sends one, each as a caller or a listener, with AES encryption from
// a passphrase. Addresses are srt:// URLs written as srt-live-transmit, TSDuck and ffmpeg
// users write them (see Address).
//
// The protocol is the reference implementation's, libsrt (Debian's libsrt-openssl-dev), bound
// through cgo in a build with the srt tag:
//
//	go build -tags srt ./cmd/tsdescramble
//
// Without the tag, or without cgo, the package still parses and redacts addresses, and Open and
// NewWriter return ErrNotBuilt; Built says which build this is.
//
// Live mode delivers each message at its sending time plus the receiver's latency (latency=),
// retransmits what is lost within that time, and drops what is still missing when its time
// comes (counted: Stats.Dropped). A message carries 7 TS packets (1316 bytes); the Writer
// batches what it is given into such messages and sends a shorter one when flushed, so that a
// quiet stream is not held back.
//
// The Reader is an io.Reader of TS bytes shaped like live.Reader and web.Reader: Read returns
// bytes as soon as some have come, ReadBlock hands over its buffers without a copy, Close ends
// it from any goroutine, SetIdleTimeout makes a Read that waits too long fail with an error for
// which errors.Is(err, live.ErrIdle) holds, and Stats counts what came, with the library's own
// loss, retransmission and drop counts. A caller whose connection is lost calls again, with
// backoff (100 ms doubling to 5 s), for as long as the Reader is open; a listener serves one
// caller at a time, turns away those that come meanwhile, and takes the next caller once the
// one it serves leaves.
//
// The Writer never holds up its writer: what comes while no peer is connected (a listener
// before its first caller, a caller calling again), or while the library's send buffer is
// full, is dropped and counted. Close waits, within a bound, for the peer to acknowledge the
// last messages, which the library would otherwise drop with the socket.
//
// A passphrase is never printed: String and every error show the address redacted (Redacted).
package srt
