package httpapi

import (
	"testing"

	"github.com/outpost-relay/outpost"
)

// No body crashes decoding, and every refusal is a client error.
func FuzzDecodeBytes(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"count":1e400}`, `[`, `{"Tags":[1]}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v req
		if err := DecodeBytes(body, &v); err != nil {
			if e := outpost.AsError(err); e == nil || e.Kind != outpost.Invalid {
				t.Fatalf("%q: %v", body, err)
			}
		}
	})
}
