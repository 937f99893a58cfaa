package units

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n        int64
		decimals int
		want     string
	}{
		{-5, 1, "-5 bytes"},
		{0, 2, "0 bytes"},
		{1, 1, "1 byte"},
		{999, 2, "999 bytes"},
		{1000, 1, "1.0 kB"},
		{1000, 2, "1.00 kB"},
		{70_500, 2, "70.50 kB"},
		{261_320, 1, "261.3 kB"},
		{999_949, 1, "999.9 kB"},
		{999_950, 1, "1.0 MB"}, // not 1000.0 kB
		{999_994, 2, "999.99 kB"},
		{999_995, 2, "1.00 MB"},
		{1_048_576, 1, "1.0 MB"},
		{62_099_408, 1, "62.1 MB"},
		{62_099_408, 2, "62.10 MB"},
		{999_950_000, 1, "1.0 GB"},
		{3_015_000_001, 2, "3.02 GB"},
		{1_000_000_000_000, 2, "1.00 TB"},
		{4_500_000_000_000_000, 1, "4500.0 TB"},
		{1500, 0, "2 kB"},
	} {
		if got := Bytes(c.n, c.decimals); got != c.want {
			t.Errorf("Bytes(%d, %d) = %q, want %q", c.n, c.decimals, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n     int64
		thing string
		want  string
	}{
		{0, "packet", "0 packets"},
		{1, "packet", "1 packet"},
		{2, "packet", "2 packets"},
		{-1, "byte", "-1 byte"},
		{1, "error reply", "1 error reply"},
		{3, "error reply", "3 error replies"},
		{2, "discontinuity", "2 discontinuities"},
		{2, "key", "2 keys"},
		{2, "ECM", "2 ECMs"},
	} {
		if got := Count(c.n, c.thing); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.thing, got, c.want)
		}
	}
}
