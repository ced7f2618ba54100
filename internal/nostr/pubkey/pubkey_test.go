package pubkey

import (
	"strings"
	"testing"
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
