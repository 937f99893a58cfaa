package dfc

// The constants of DFC are consecutive words of EES, the fractional part of
// e = 2.718281828... written in hexadecimal (b7e15162 8aed2a6a ...), as
// section 3 of the specification defines them. The values below were taken
// from that expansion with the correction listed in the authors' errata (the
// extended abstract misprints the words that become KC and KD); the
// known-answer tests in testdata/ confirm them.

// rt is the table RT used by the confusion permutation CP: EES bits 0..2047,
// as 64 big-endian 32-bit words.
var rt = [64]uint32{
	0xb7e15162, 0x8aed2a6a, 0xbf715880, 0x9cf4f3c7, 0x62e7160f, 0x38b4da56, 0xa784d904, 0x5190cfef,
	0x324e7738, 0x926cfbe5, 0xf4bf8d8d, 0x8c31d763, 0xda06c80a, 0xbb1185eb, 0x4f7c7b57, 0x57f59584,
	0x90cfd47d, 0x7c19bb42, 0x158d9554, 0xf7b46bce, 0xd55c4d79, 0xfd5f24d6, 0x613c31c3, 0x839a2ddf,
	0x8a9a276b, 0xcfbfa1c8, 0x77c56284, 0xdab79cd4, 0xc2b3293d, 0x20e9e5ea, 0xf02ac60a, 0xcc93ed87,
	0x4422a52e, 0xcb238fee, 0xe5ab6add, 0x835fd1a0, 0x753d0a8f, 0x78e537d2, 0xb95bb79d, 0x8dcaec64,
	0x2c1e9f23, 0xb829b5c2, 0x780bf387, 0x37df8bb3, 0x00d01334, 0xa0d0bd86, 0x45cbfa73, 0xa6160ffe,
	0x393c48cb, 0xbbca060f, 0x0ff8ec6d, 0x31beb5cc, 0xeed7f2f0, 0xbb088017, 0x163bc60d, 0xf45a0ecb,
	0x1bcd289b, 0x06cbbfea, 0x21ad08e1, 0x847f3f73, 0x78d56ced, 0x94640d6e, 0xf0d3d37b, 0xe67008e1,
}

const (
	// kd is the constant KD added at the end of CP: EES bits 2048..2111.
	kd uint64 = 0x86d1bf275b9b241d
	// kc is the constant KC XORed into the high half in CP: EES bits 2112..2143.
	kc uint32 = 0xeb64749a
)

// ka holds KA2, KA3, KA4 of the key schedule: EES bits 0..191 (the same words
// as rt[0:6]).
var ka = [3]uint64{0xb7e151628aed2a6a, 0xbf7158809cf4f3c7, 0x62e7160f38b4da56}

// kb holds KB2, KB3, KB4 of the key schedule: EES bits 192..383 (rt[6:12]).
var kb = [3]uint64{0xa784d9045190cfef, 0x324e7738926cfbe5, 0xf4bf8d8d8c31d763}

// ks is KS, the 256-bit string that pads a short key: EES bits 384..639
// (rt[12:20]).
var ks = [32]byte{
	0xda, 0x06, 0xc8, 0x0a, 0xbb, 0x11, 0x85, 0xeb, 0x4f, 0x7c, 0x7b, 0x57, 0x57, 0xf5, 0x95, 0x84,
	0x90, 0xcf, 0xd4, 0x7d, 0x7c, 0x19, 0xbb, 0x42, 0x15, 0x8d, 0x95, 0x54, 0xf7, 0xb4, 0x6b, 0xce,
}
