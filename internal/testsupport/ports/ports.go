// Package ports hands the tests ports on 127.0.0.1 for a process they start to bind.
//
// A port the kernel picked with port 0 and that was closed again lies in the ephemeral range,
// which every socket that connects without binding draws from: a test elsewhere on the machine
// that dials may take it before the process under test binds it. The ports handed out here
// lie below that range, are drawn at random, are checked free, and are never handed out twice
// in one test binary.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// low and high bound the draw when the ephemeral range cannot be read; Linux's default range
// starts at 32768.
const (
	low         = 20000
	defaultHigh = 32767
)

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// UDP returns a UDP port free on 127.0.0.1.
func UDP(t testing.TB) int {
	t.Helper()
	return pick(t, func(p int) error {
		c, err := net.ListenPacket("udp4", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			c.Close()
		}
		return err
	})
}

// TCP returns a TCP port free on 127.0.0.1.
func TCP(t testing.TB) int {
	t.Helper()
	return pick(t, func(p int) error {
		l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			l.Close()
		}
		return err
	})
}

func pick(t testing.TB, free func(int) error) int {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	high := ephemeralStart() - 1
	var last error
	for range 200 {
		p := low + rand.IntN(high-low+1)
		if handed[p] {
			continue
		}
		if last = free(p); last == nil {
			handed[p] = true
			return p
		}
	}
	t.Fatalf("no free port on 127.0.0.1 between %d and %d: %v", low, high, last)
	return 0
}

// ephemeralStart reads the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultHigh + 1
	}
	var first, last int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &first, &last); err != nil || first <= low+1000 {
		return defaultHigh + 1
	}
	return first
}
