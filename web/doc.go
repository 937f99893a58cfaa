// Package web reads a transport stream from an http:// or https:// URL: a stream or a file
// served over HTTP, or an HLS playlist (RFC 8216) whose segments are MPEG-TS.
//
// Open returns a Reader, an io.Reader of TS bytes shaped like live.Reader: Read returns bytes
// as soon as some have come, Close ends it from any goroutine, SetIdleTimeout makes a Read
// that waits too long return an error for which errors.Is(err, live.ErrIdle) holds, and Stats
// counts what came. The bytes are passed on as the server sends them; the framer downstream
// (ts.Source) finds the packets and resyncs where a reconnection or a lost segment cut one.
//
// A response with a Content-Length is a file: read whole, it ends the input. A file whose
// connection is lost or stalls before its end is asked for again from the byte where it
// stopped (Range: bytes=N-), with If-Range naming the first response's strong ETag or its
// Last-Modified, so that a file changed since is not spliced onto what came of the old one;
// the answer must be 206 with the Content-Range asked for. A server that answers with the
// whole file, or says Accept-Ranges: none, cannot resume it, and the input fails with an error
// saying where the file was cut: bytes passed on are never passed on again. A response without
// a Content-Length is a live stream: when it ends, fails or stalls, the Reader connects again.
// Reconnections and resumes wait with the same backoff, and give up once the server has failed
// for 30 seconds in a row (Options.GiveUpAfter). A connection stalls when it stays open and
// brings no byte for Options.StallTimeout (5 seconds, or three times the longest pause the
// input has made and come back from, up to a minute); it is dropped and counted
// (Stats.Stalls). An HLS segment's connection is watched the same way.
//
// A playlist is parsed with github.com/grafov/m3u8. From a master playlist the variant of the
// highest BANDWIDTH is read, or the one a variant=N query parameter names. A VOD playlist is
// read segment by segment to its end; a live one is reloaded as RFC 8216 6.3.4 says, each new
// segment read once, in media-sequence order, starting three target durations from its end
// as 6.3.3 asks, and segments that left the playlist before they were read are counted, not
// fetched. Encrypted segments (EXT-X-KEY) and fragmented MP4 (EXT-X-MAP) are refused: they are
// not TS. Renditions in a playlist of their own (EXT-X-MEDIA, such as a separate audio track)
// are not read; only the variant's own segments are.
//
// Credentials in the URL (user:password@) are sent as basic authentication, to the host they
// name, and never printed: String and every error show the URL redacted.
package web
