package psi

// crcTable drives the CRC_32 of PSI sections: ISO/IEC 13818-1 Annex A, polynomial 0x04C11DB7,
// most significant bit first, initial value 0xFFFFFFFF, no final inversion (CRC-32/MPEG-2).
// hash/crc32 computes the bit-reversed variant only, hence this table.
var crcTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC32 returns the CRC-32/MPEG-2 of b, the checksum of PSI sections. Over a whole section, CRC_32 field included, it
// is zero when the section is intact (the decoder check of Annex A).
func CRC32(b []byte) uint32 {
	c := uint32(0xFFFFFFFF)
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>24)^x]
	}
	return c
}
