//go:build !linux

package udpload

import (
	"net"
	"time"
)

func threadCPU() time.Duration { return 0 }

var oobSize = 0

func setSocket(*net.UDPConn) {}

func enableGRO(*net.UDPConn) bool { return false }

func enableGSO(*net.UDPConn, int) bool { return false }

func controls([]byte) (int64, bool, int) { return 0, false, 0 }

func readBuffer(*net.UDPConn) int { return 0 }
