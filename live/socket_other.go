//go:build !linux

package live

// Elsewhere the options Linux offers are left at the system's defaults, except the buffer.

func setSockOpts(fd int, o sockOpts) error { return nil }

func getRcvBuf(fd int) int { return 0 }

var oobSize = 0

func dropCounter(oob []byte) (uint32, bool) { return 0, false }
