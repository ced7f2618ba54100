package pubkey

import "encoding/hex"

// The npub form (NIP-19: bech32, prefix "npub", 32 bytes) encoded and
// decoded without the general bech32 code, which costs about 2.5 µs a key
// in its checksum: a follower or the strfry plugin taking a list of a
// million keys spent most of its CPU there, and the server as much making
// the list. Anything but a well-formed lowercase npub goes to nip19, so
// what is accepted and refused is nip19's.

const bech32Chars = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

// npubLen is the length of an npub: "npub1", 52 characters of data (256
// bits and 4 of padding) and 6 of checksum.
const npubLen = 5 + 52 + 6

var (
	bech32Values = func() (v [256]int8) {
		for i := range v {
			v[i] = -1
		}
		for i := range len(bech32Chars) {
			v[bech32Chars[i]] = int8(i)
		}
		return v
	}()
	// npubChecksumStart is the checksum's state after the prefix "npub".
	npubChecksumStart = func() uint32 {
		chk := uint32(1)
		for _, c := range []byte("npub") {
			chk = polymodStep(chk, c>>5)
		}
		chk = polymodStep(chk, 0)
		for _, c := range []byte("npub") {
			chk = polymodStep(chk, c&31)
		}
		return chk
	}()
)

// polymodStep is one 5-bit step of bech32's checksum (BIP-173).
func polymodStep(chk uint32, v byte) uint32 {
	top := chk >> 25
	chk = (chk&0x1ffffff)<<5 ^ uint32(v)
	for i, g := range [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3} {
		if (top>>i)&1 == 1 {
			chk ^= g
		}
	}
	return chk
}

// decodeNPub is the 64 hex characters of a lowercase npub, ok false for
// anything else (left to nip19).
func decodeNPub(s string) (string, bool) {
	if len(s) != npubLen || s[:5] != "npub1" {
		return "", false
	}
	var key [32]byte
	chk := npubChecksumStart
	acc, bits, n := uint32(0), 0, 0
	for i := 5; i < npubLen; i++ {
		v := bech32Values[s[i]]
		if v < 0 {
			return "", false
		}
		chk = polymodStep(chk, byte(v))
		if i >= npubLen-6 {
			continue // the checksum
		}
		acc, bits = acc<<5|uint32(v), bits+5
		if bits >= 8 {
			bits -= 8
			key[n] = byte(acc >> bits)
			n++
		}
	}
	if chk != 1 || acc&(1<<bits-1) != 0 {
		return "", false // a bad checksum, or padding that is not zero
	}
	return hex.EncodeToString(key[:]), true
}

// encodeNPub is the npub of 32 bytes.
func encodeNPub(key []byte) string {
	var out [npubLen]byte
	copy(out[:], "npub1")
	chk := npubChecksumStart
	acc, bits, n := uint32(0), 0, 5
	put := func(v byte) {
		chk = polymodStep(chk, v)
		out[n] = bech32Chars[v]
		n++
	}
	for _, b := range key {
		acc, bits = acc<<8|uint32(b), bits+8
		for bits >= 5 {
			bits -= 5
			put(byte(acc>>bits) & 31)
		}
	}
	put(byte(acc<<(5-bits)) & 31) // the last 1 bit and 4 of padding
	for range 6 {
		chk = polymodStep(chk, 0)
	}
	chk ^= 1
	for i := range 6 {
		out[n+i] = bech32Chars[(chk>>(5*(5-i)))&31]
	}
	return string(out[:])
}
