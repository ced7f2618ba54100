package nip98

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
)

func TestVerify(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	pub, _ := nostr.GetPublicKey(sk)
	now := time.Unix(1_700_000_000, 0)
	const u = "https://outpost.example/faucet/auth/login"
	body := []byte(`{"a":1}`)
	sign := func(mod func(*nostr.Event)) string {
		ev := nostr.Event{Kind: Kind, CreatedAt: nostr.Timestamp(now.Unix()), Tags: nostr.Tags{{"u", u}, {"method", "POST"}}}
		mod(&ev)
		ev.Sign(sk)
		b, _ := json.Marshal(ev)
		return "Nostr " + base64.StdEncoding.EncodeToString(b)
	}
	good, _ := Sign(sk, "POST", u, body, now)
	tampered := func() string {
		ev := nostr.Event{Kind: Kind, CreatedAt: nostr.Timestamp(now.Unix()), Tags: nostr.Tags{{"u", u}, {"method", "POST"}}}
		ev.Sign(sk)
		ev.Content = "changed after signing"
		ev.ID = ev.GetID() // a valid id, but the signature is for the old one
		b, _ := json.Marshal(ev)
		return "Nostr " + base64.StdEncoding.EncodeToString(b)
	}()
	tests := []struct {
		name      string
		header    string
		req       Request
		wantCheck string
	}{
		{"ok", good, Request{Method: "POST", URLs: []string{u}, Body: body}, ""},
		{"no header", "", Request{Method: "POST", URLs: []string{u}}, "header"},
		{"bearer", "Bearer x", Request{Method: "POST", URLs: []string{u}}, "header"},
		{"garbage base64", "Nostr %%%", Request{Method: "POST", URLs: []string{u}}, "base64"},
		{"not json", "Nostr " + base64.StdEncoding.EncodeToString([]byte("hi")), Request{Method: "POST", URLs: []string{u}}, "json"},
		{"wrong kind", sign(func(e *nostr.Event) { e.Kind = 1 }), Request{Method: "POST", URLs: []string{u}}, "kind"},
		{"bad signature", tampered, Request{Method: "POST", URLs: []string{u}}, "signature"},
		{"too old", sign(func(e *nostr.Event) { e.CreatedAt -= 61 }), Request{Method: "POST", URLs: []string{u}}, "created_at"},
		{"too new", sign(func(e *nostr.Event) { e.CreatedAt += 61 }), Request{Method: "POST", URLs: []string{u}}, "created_at"},
		{"at the edge", sign(func(e *nostr.Event) { e.CreatedAt -= 60 }), Request{Method: "POST", URLs: []string{u}}, ""},
		{"wrong u", sign(func(e *nostr.Event) {}), Request{Method: "POST", URLs: []string{"https://outpost.example/faucet/auth/me"}}, "u"},
		{"u with other host", sign(func(e *nostr.Event) { e.Tags[0][1] = "https://evil.example/faucet/auth/login" }), Request{Method: "POST", URLs: []string{u}}, "u"},
		{"u host case", sign(func(e *nostr.Event) { e.Tags[0][1] = "https://OUTPOST.example/faucet/auth/login" }), Request{Method: "POST", URLs: []string{u}}, ""},
		{"wrong method", sign(func(e *nostr.Event) {}), Request{Method: "GET", URLs: []string{u}}, "method"},
		{"method in lower case", sign(func(e *nostr.Event) { e.Tags[1][1] = "post" }), Request{Method: "POST", URLs: []string{u}}, "method"},
		{"no method", sign(func(e *nostr.Event) { e.Tags = e.Tags[:1] }), Request{Method: "POST", URLs: []string{u}}, "method"},
		{"two methods", sign(func(e *nostr.Event) { e.Tags = append(e.Tags, nostr.Tag{"method", "POST"}) }), Request{Method: "POST", URLs: []string{u}}, "method"},
		{"no u", sign(func(e *nostr.Event) { e.Tags = e.Tags[1:] }), Request{Method: "POST", URLs: []string{u}}, "u"},
		{"a second u", sign(func(e *nostr.Event) { e.Tags = append(e.Tags, nostr.Tag{"u", "https://evil.example/"}) }), Request{Method: "POST", URLs: []string{u}}, "u"},
		{"a second u, right first", sign(func(e *nostr.Event) { e.Tags = append(nostr.Tags{{"u", u}}, e.Tags...) }), Request{Method: "POST", URLs: []string{u}}, "u"},
		{"a u tag without a value", sign(func(e *nostr.Event) { e.Tags = append(e.Tags, nostr.Tag{"u"}) }), Request{Method: "POST", URLs: []string{u}}, "u"},
		{"two payloads", sign(func(e *nostr.Event) {
			e.Tags = append(e.Tags, nostr.Tag{"payload", "ab"}, nostr.Tag{"payload", "cd"})
		}), Request{Method: "POST", URLs: []string{u}}, "payload"},
		{"no payload for a body", sign(func(e *nostr.Event) {}), Request{Method: "POST", URLs: []string{u}, Body: body}, "payload"},
		{"wrong payload", good, Request{Method: "POST", URLs: []string{u}, Body: []byte(`{"a":2}`)}, "payload"},
		{"replay", good, Request{Method: "POST", URLs: []string{u}, Body: body}, "replay"},
	}
	v := NewVerifier(0, func() time.Time { return now }, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(tt.header, tt.req)
			if tt.wantCheck == "" {
				if err != nil || got != pub {
					t.Fatalf("Verify = %q, %v; want %q", got, err, pub)
				}
				return
			}
			e := outpost.AsError(err)
			if e == nil || e.Kind != outpost.Unauthorized || e.Details["check"] != tt.wantCheck {
				t.Fatalf("Verify error = %v (details %v), want check %q", err, e, tt.wantCheck)
			}
		})
	}
}

// A reusable request (a read) may come with the same event again; the one
// event is still good once for any other request.
func TestReusable(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	now := time.Unix(1_700_000_000, 0)
	const u = "https://relay.example/"
	body := []byte(`{"method":"listbannedpubkeys","params":[]}`)
	h, _ := Sign(sk, "POST", u, body, now)
	v := NewVerifier(0, func() time.Time { return now }, nil)
	read := Request{Method: "POST", URLs: []string{u}, Body: body, Reusable: true}
	for i := range 3 {
		if _, err := v.Verify(h, read); err != nil {
			t.Fatalf("use %d of a reusable request: %v", i+1, err)
		}
	}
	write := read
	write.Reusable = false
	if _, err := v.Verify(h, write); err != nil {
		t.Fatalf("first one-use verification: %v", err)
	}
	if e := outpost.AsError(second(v.Verify(h, write))); e == nil || e.Details["check"] != "replay" {
		t.Fatalf("second one-use verification: %v", e)
	}
	// The time window still applies.
	late := NewVerifier(0, func() time.Time { return now.Add(61 * time.Second) }, nil)
	if e := outpost.AsError(second(late.Verify(h, read))); e == nil || e.Details["check"] != "created_at" {
		t.Fatalf("a reusable request out of the window: %v", e)
	}
}

func second[T any](_ T, err error) error { return err }
