// Package live carries transport streams over the network: a Reader that receives a stream
// from a udp:// or rtp:// address, a Writer that sends one, and a Pacer that sends a stream at
// the rate its PCR says it plays.
//
// Addresses are written as VLC, dvblast and TSDuck users write them (see Address): unicast and
// multicast, IPv4 and IPv6, any-source and source-specific joins, with options for the
// interface, TTL, TOS, packets per datagram, socket buffer and RTP SSRC.
//
// The Reader is an io.Reader of TS bytes. It checks each datagram on its own and drops one that
// is not a whole number of packets, so that no packet is made of bytes of two datagrams. It
// strips RTP headers (RFC 3550, with the MP2T payload of RFC 2250), follows one sender (SSRC),
// puts datagrams that arrive out of order back in order within a window of four, drops
// duplicates and counts losses; it also recognises RTP on a udp:// address, datagram by
// datagram, as TSDuck does, since senders disagree on the scheme. It reads datagrams in batches (recvmmsg on Linux)
// into a large socket buffer, because a live input that drops datagrams while the program is
// busy elsewhere cannot get them back.
//
// The Writer is an io.Writer of TS bytes that sends a fixed number of packets per datagram,
// with RTP headers for rtp:// (payload type 33, a 90 kHz timestamp from the PCR). Flush sends a
// short datagram, so a caller can bound the latency of a quiet stream.
//
// On Linux both ends spare the kernel work per datagram where it allows: the Writer hands it up
// to 64 datagrams of one size per message (UDP_SEGMENT), which it cuts into the same datagrams,
// and the Reader asks for datagrams coalesced (UDP_GRO) and cuts them apart again, each with
// its RTP header. Where the kernel refuses, both fall back to a datagram per message.
//
// Both ends work on loopback and inside network namespaces, which is how the tests run them
// against ffmpeg, multicat and socat.
package live
