package compact

import "math/bits"

// runeCount is the number of characters of s, UTF-8 text as stored
// conversations are: its bytes less its continuation bytes, counted eight
// bytes at a time, as results run to tens of thousands of bytes and Fit
// sizes every one of them.
func runeCount(s string) int {
	const high = 0x8080808080808080
	cont, i := 0, 0
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		// A continuation byte is 10xxxxxx: its top bit set, the next clear.
		cont += bits.OnesCount64(w &^ (w << 1) & high)
	}
	for ; i < len(s); i++ {
		if s[i]&0xC0 == 0x80 {
			cont++
		}
	}
	return len(s) - cont
}
