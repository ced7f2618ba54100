package pubkey

import (
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

func TestParse(t *testing.T) {
	const hexKey = "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d"
	const npub = "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6"
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{hexKey, hexKey, false},
		{strings.ToUpper(hexKey), hexKey, false},
		{npub, hexKey, false},
		{" " + npub + " ", hexKey, false},
		{"", "", true},
		{hexKey[:63], "", true},
		{hexKey[:63] + "g", "", true},
		{npub[:len(npub)-1] + "q", "", true}, // bad checksum
		{"nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5", "", true},
		{strings.Repeat("f", 64), "", true}, // not an x coordinate on the curve
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want %q, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	// Lookups check the form only.
	if got, err := ParseForLookup(strings.Repeat("F", 64)); err != nil || got != strings.Repeat("f", 64) {
		t.Errorf("ParseForLookup(off-curve hex) = %q, %v", got, err)
	}
	if _, err := ParseForLookup(hexKey[:63] + "g"); err == nil {
		t.Error("ParseForLookup accepted non-hex")
	}
	if NPub(hexKey) != npub {
		t.Errorf("NPub = %q, want %q", NPub(hexKey), npub)
	}
}

// TestOnCurveAgreesWithTheLibrary: the Jacobi-symbol check takes exactly
// the keys go-nostr's square root takes, over random x coordinates (about
// half of which are on the curve) and the edges of the field.
func TestOnCurveAgreesWithTheLibrary(t *testing.T) {
	xs := []string{strings.Repeat("0", 64), strings.Repeat("f", 64),
		"fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2e",
		"fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f",
		"fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc30"}
	var b [32]byte
	for range 5000 {
		rand.Read(b[:])
		xs = append(xs, hex.EncodeToString(b[:]))
	}
	on := 0
	for _, x := range xs {
		want := nostr.IsValidPublicKey(x)
		if got := onCurve(x); got != want {
			t.Fatalf("onCurve(%s) = %v, go-nostr says %v", x, got, want)
		}
		if want {
			on++
		}
	}
	if on < 2000 || on > 3000 {
		t.Errorf("%d of %d random x on the curve: the test does not test", on, len(xs))
	}
}

// The npub fast paths agree with nip19 on random keys, and a changed
// character (a bad checksum) or uppercase is left to nip19's verdict.
func TestNPubAgreesWithNIP19(t *testing.T) {
	r := mrand.New(mrand.NewPCG(1, 2))
	for range 2000 {
		var b [32]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		k := hex.EncodeToString(b[:])
		want, _ := nip19.EncodePublicKey(k)
		if got := NPub(k); got != want {
			t.Fatalf("NPub(%s) = %s, want %s", k, got, want)
		}
		if got, err := ParseForLookup(want); err != nil || got != k {
			t.Fatalf("ParseForLookup(%s) = %s, %v; want %s", want, got, err, k)
		}
		bad := []byte(want)
		i := 5 + r.IntN(len(bad)-5)
		bad[i] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"[(strings.IndexByte("qpzry9x8gf2tvdw0s3jn54khce6mua7l", bad[i])+1+r.IntN(31))%32]
		if _, err := ParseForLookup(string(bad)); err == nil {
			t.Fatalf("%s (one character changed) parsed", bad)
		}
		if got, err := ParseForLookup("npub1" + strings.ToUpper(want[5:])); (err == nil) != (nip19Parses("npub1"+strings.ToUpper(want[5:]))) || (err == nil && got != k) {
			t.Fatalf("mixed case: %s %v", got, err)
		}
	}
}

func nip19Parses(s string) bool {
	p, _, err := nip19.Decode(s)
	return err == nil && p == "npub"
}

func BenchmarkParseNPub(b *testing.B) {
	n := NPub(strings.Repeat("3b", 32))
	for b.Loop() {
		ParseForLookup(n)
	}
}
