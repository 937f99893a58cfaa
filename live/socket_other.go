//go:build !linux

package live

import (
	"net"

	"golang.org/x/net/ipv4"
)

// Elsewhere the options Linux offers are left at the system's defaults, except the buffer.

func setSockOpts(fd int, o sockOpts) error { return nil }

func getRcvBuf(fd int) int { return 0 }

var oobSize = 0

func enableGRO(fd int) bool { return false }

type controls struct {
	drops    uint32
	hasDrops bool
	segment  int
}

func parseControls(oob []byte) controls { return controls{} }

var gsoControlSize = 0

func putGSOControl(b []byte, size int) []byte { return b[:0] }

func gsoRefused(err error) bool { return true }

// batchReceiver takes datagrams into a fixed set of messages, through x/net (recvmmsg where
// the system has it, one datagram a call elsewhere).
type batchReceiver struct {
	bc batchConn
	ms []ipv4.Message
}

func newBatchReceiver(c *net.UDPConn, ms []ipv4.Message) (*batchReceiver, error) {
	return &batchReceiver{bc: newBatchConn(c), ms: ms}, nil
}

func (b *batchReceiver) receive() (int, error) { return b.bc.ReadBatch(b.ms, 0) }
