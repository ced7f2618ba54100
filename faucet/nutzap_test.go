package faucet

import (
	"slices"
	"testing"

	"github.com/outpost-relay/outpost"
)

// TestNutzapsNeedAKey: a faucet without a key to sign nutzaps with does not
// offer them, and a quote for one is refused with nutzap_unavailable before
// anything else is looked up; a note is for nutzaps only.
func TestNutzapsNeedAKey(t *testing.T) {
	r := newRig(t, rigOptions{})
	if m := r.s.PublicConfig().PayoutMethods; slices.Contains(m, MethodNutzap) {
		t.Fatalf("offered %v", m)
	}
	sess := Session{PubKey: "aa", Method: LoginNIP98}
	_, err := r.s.Quote(r.ctx, sess, "203.0.113.1", MethodNutzap, "", "")
	if e := outpost.AsError(err); e == nil || e.Code != "nutzap_unavailable" {
		t.Fatalf("quote: %v", err)
	}
	_, err = r.s.Quote(r.ctx, sess, "203.0.113.1", MethodCashu, "", "ab")
	if e := outpost.AsError(err); e == nil || e.Code != "invalid_request" {
		t.Fatalf("a note with a cashu quote: %v", err)
	}
	for _, key := range []string{"", "02", "04" + sixtyFour, "02" + sixtyFour + "00"} {
		if _, err := nutzapKey(key); err == nil {
			t.Errorf("key %q taken", key)
		}
	}
}

// sixtyFour is the x of a point on the curve (the generator's).
const sixtyFour = "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"

func TestNutzapKey(t *testing.T) {
	for in, want := range map[string]string{sixtyFour: "02" + sixtyFour, "03" + sixtyFour: "03" + sixtyFour,
		" 02" + sixtyFour + " ": "02" + sixtyFour} {
		if got, err := nutzapKey(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
}
