package nip98

import (
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
)

// No header crashes the verifier, and every refusal names its check.
func FuzzVerify(f *testing.F) {
	good, _ := Sign("0000000000000000000000000000000000000000000000000000000000000001", "POST", "https://x.example/a", []byte("{}"), time.Unix(1_700_000_000, 0))
	f.Add(good)
	f.Add("Nostr ")
	f.Add("Nostr eyJraW5kIjoyNzIzNX0=")
	v := NewVerifier(0, func() time.Time { return time.Unix(1_700_000_000, 0) }, nil)
	f.Fuzz(func(t *testing.T, header string) {
		_, err := v.Verify(header, Request{Method: "POST", URLs: []string{"https://x.example/a"}, Body: []byte("{}")})
		if err == nil {
			return
		}
		e := outpost.AsError(err)
		if e == nil || e.Kind != outpost.Unauthorized || e.Details["check"] == nil {
			t.Fatalf("refusal without a check: %v", err)
		}
	})
}
