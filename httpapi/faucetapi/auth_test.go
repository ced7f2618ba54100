package faucetapi_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// TestNIP98Failures: every check of the verifier answers 401 naming it,
// and a refused login stores nothing.
func TestNIP98Failures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0, nil)
	sk := nostr.GeneratePrivateKey()
	loginURL := e.url + "/faucet/auth/login"
	event := func(mod func(ev *nostr.Event)) *nostr.Event {
		ev := &nostr.Event{Kind: nip98.Kind, CreatedAt: nostr.Timestamp(e.clock.Now().Unix()),
			Tags: nostr.Tags{{"u", loginURL}, {"method", "POST"}}}
		if mod != nil {
			mod(ev)
		}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	header := func(ev *nostr.Event) string {
		b, _ := json.Marshal(ev)
		return "Nostr " + base64.StdEncoding.EncodeToString(b)
	}
	tampered := event(nil)
	tampered.Content = "changed after signing"
	badSig := event(nil)
	badSig.Sig = strings.Repeat("0", 128)
	valid := header(event(nil))

	cases := []struct {
		name, path, header, check string
		body                      any
	}{
		{"no header", "/auth/login", "", "header", nil},
		{"a bearer token is no login", "/auth/login", "Bearer abcdefghijkl", "header", nil},
		{"garbage base64", "/auth/login", "Nostr %%%not*base64%%%", "base64", nil},
		{"not json", "/auth/login", "Nostr " + base64.StdEncoding.EncodeToString([]byte("hello")), "json", nil},
		{"wrong kind", "/auth/login", header(event(func(ev *nostr.Event) { ev.Kind = 1 })), "kind", nil},
		{"tampered content", "/auth/login", header(tampered), "id", nil},
		{"bad signature", "/auth/login", header(badSig), "signature", nil},
		{"61 s old", "/auth/login", header(event(func(ev *nostr.Event) { ev.CreatedAt -= 61 })), "created_at", nil},
		{"61 s ahead", "/auth/login", header(event(func(ev *nostr.Event) { ev.CreatedAt += 61 })), "created_at", nil},
		{"another path", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags[0][1] = e.url + "/faucet/auth/me" })), "u", nil},
		{"another host", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags[0][1] = "http://evil.example/faucet/auth/login" })), "u", nil},
		{"no u", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags = ev.Tags[1:] })), "u", nil},
		{"wrong method", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags[1][1] = "GET" })), "method", nil},
		{"method in lower case", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags[1][1] = "post" })), "method", nil},
		{"no method", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags = ev.Tags[:1] })), "method", nil},
		{"two methods", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"method", "GET"}) })), "method", nil},
		{"a second u", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"u", "http://evil.example/"}) })), "u", nil},
		{"the same u twice", "/auth/login", header(event(func(ev *nostr.Event) { ev.Tags = append(ev.Tags, ev.Tags[0]) })), "u", nil},
		{"payload of another body", "/claim/quote", header(event(func(ev *nostr.Event) {
			ev.Tags = nostr.Tags{{"u", e.url + "/faucet/claim/quote"}, {"method", "POST"}, {"payload", strings.Repeat("ab", 32)}}
		})), "payload", map[string]any{"method": "cashu"}},
		{"no payload for a body", "/claim/quote", header(event(func(ev *nostr.Event) {
			ev.Tags = nostr.Tags{{"u", e.url + "/faucet/claim/quote"}, {"method", "POST"}}
		})), "payload", map[string]any{"method": "cashu"}},
		{"per-request auth on a GET", "/auth/me", header(event(nil)), "u", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := []string{}
			if c.header != "" {
				hdr = []string{"Authorization", c.header}
			}
			method := "POST"
			if c.path == "/auth/me" {
				method = "GET"
			}
			r := e.api.Do(method, c.path, raw(c.body), hdr...)
			want(t, r, 401, "unauthorized")
			var body struct {
				Details map[string]any `json:"details"`
			}
			json.Unmarshal(r.Body, &body)
			if body.Details["check"] != c.check {
				t.Fatalf("details %v, want check %q", body.Details, c.check)
			}
		})
	}

	t.Run("replay", func(t *testing.T) {
		want(t, e.api.Do("POST", "/auth/login", nil, "Authorization", valid), 200, "")
		r := e.api.Do("POST", "/auth/login", nil, "Authorization", valid)
		want(t, r, 401, "unauthorized")
		if !strings.Contains(string(r.Body), `"check":"replay"`) {
			t.Fatalf("replay: %s", r.Body)
		}
	})

	t.Run("the Host header is never the URL", func(t *testing.T) {
		do := func(u, host string) int {
			ev := event(func(ev *nostr.Event) { ev.Tags[0][1], ev.Content = u, "host test" })
			req, _ := http.NewRequest("POST", loginURL, nil)
			req.Host = host
			req.Header.Set("Authorization", header(ev))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := do("http://evil.example/faucet/auth/login", "evil.example"); got != 401 {
			t.Fatalf("an event for the Host header's URL: %d, want 401", got)
		}
		if got := do(loginURL, "evil.example"); got != 200 {
			t.Fatalf("an event for the public URL, whatever the Host: %d, want 200", got)
		}
	})

	t.Run("sessions", func(t *testing.T) {
		want(t, e.api.Do("GET", "/auth/me", nil, "Authorization", "Bearer ofs_unknown-token-0123456789"), 401, "unauthorized")
		want(t, e.api.Do("GET", "/auth/me", nil, "Authorization", "Bearer x"), 401, "unauthorized")
		u := e.newUser("sess", theMint, nil)
		e.loginNPub(u)
		want(t, e.as(u, "GET", "/auth/me", nil), 200, "")
		e.clock.Add(time.Hour)
		want(t, e.as(u, "GET", "/auth/me", nil), 401, "unauthorized") // npub sessions last an hour
		e.login(u)
		e.clock.Add(23*time.Hour + 59*time.Minute)
		want(t, e.as(u, "GET", "/auth/me", nil), 200, "")
		e.clock.Add(time.Minute)
		want(t, e.as(u, "GET", "/auth/me", nil), 401, "unauthorized")
	})

	t.Run("bad npub logins", func(t *testing.T) {
		for _, body := range []any{map[string]any{"npub": "npub1nope"}, map[string]any{}, map[string]any{"npub": 42}, "not json", []any{1}} {
			r := e.api.Do("POST", "/auth/login-npub", body)
			if r.Status != 400 {
				t.Fatalf("%v: %d %s", body, r.Status, r.Body)
			}
		}
	})

	// Only the two logins above made users; none of the refused ones did.
	users := 0
	e.st.DB.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: kv.Key(kv.PrefixFaucet, 0x03)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			users++
		}
		return nil
	})
	if users != 2 {
		t.Fatalf("%d users stored, want 2", users)
	}
}

// TestPublicURL: behind a proxy the faucet is reached at 127.0.0.1 but
// known as OUTPOST_PUBLIC_URL, and NIP-98 events must name the latter.
func TestPublicURL(t *testing.T) {
	t.Parallel()
	e := newEnvAt(t, "https://faucet.example", 0, nil)
	u := e.newUser("behind", theMint, nil)
	want(t, e.signed(u, "POST", "/auth/login", nil), 200, "")
	h, _ := nip98.Sign(u.sk, "POST", e.url+"/faucet/auth/login", nil, e.clock.Now())
	r := e.api.Do("POST", "/auth/login", nil, "Authorization", h)
	want(t, r, 401, "unauthorized")
	if !strings.Contains(string(r.Body), `"expected_u":"https://faucet.example/faucet/auth/login"`) {
		t.Fatalf("an event for the server's own address: %s", r.Body)
	}
	q, _ := nip98.Sign(u.sk, "GET", "https://faucet.example/faucet/auth/me?x=1", nil, e.clock.Now())
	want(t, e.api.Do("GET", "/auth/me?x=1", nil, "Authorization", q), 200, "")
}
