package banlistapi_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// A word or key name holds any character, "/" and "%" included: what can be
// created can be deleted, by its path-escaped form.
func TestPathValuesAreUnescaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	for _, word := range []string{"fz/slash1", "100% legit", "a?b#c", "semi;colon", "plus+sign", "grüße", "ünï/cødé%2F"} {
		t.Run(word, func(t *testing.T) {
			wantStatus(t, e.api.Do("POST", "/admin/words", map[string]any{"word": word}, bearer(adminKey)...), 201, "")
			r := e.api.Do("DELETE", "/admin/words/"+url.PathEscape(word), nil, bearer(adminKey)...)
			wantStatus(t, r, 200, "")
			if got := r.Map(t)["word"].(map[string]any)["word"]; got != word {
				t.Fatalf("removed %q, want %q", got, word)
			}
		})
	}
	if n := len(e.api.Do("GET", "/admin/words", nil, bearer(adminKey)...).Map(t)["words"].([]any)); n != 0 {
		t.Fatalf("%d words left", n)
	}
	for _, name := range []string{"ops/alice", "50%"} {
		wantStatus(t, e.api.Do("POST", "/admin/keys", map[string]any{"name": name, "role": "viewer"}, bearer(adminKey)...), 201, "")
		wantStatus(t, e.api.Do("DELETE", "/admin/keys/"+url.PathEscape(name), nil, bearer(adminKey)...), 200, "")
	}
	_, pkHex, _ := newKey()
	// An escaped path value is a pubkey too.
	wantStatus(t, e.api.Do("GET", "/blocked/pubkeys/"+strings.ReplaceAll(pkHex, "a", "%61"), nil), 200, "")
}

// Only white space may follow a JSON body; anything else is refused and
// nothing is written.
func TestTrailingJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{reportsPerMin: 100})
	_, pkHex, _ := newKey()
	for _, tt := range []struct{ path, body string }{
		{"/admin/words", `{"word":"x1"}]`},
		{"/admin/words", `{"word":"x1"}}`},
		{"/admin/words", `{"word":"x1"},{}`},
		{"/admin/ban", `{"pubkey":"` + pkHex + `","reason":"x"}]`},
		{"/reports", `{"reported_pubkey":"` + pkHex + `","reason":"spam"}}`},
		{"/admin/keys", `{"name":"k","role":"viewer"} null`},
	} {
		wantStatus(t, e.api.Do("POST", tt.path, tt.body, bearer(adminKey)...), 400, "invalid_json")
	}
	if words := e.api.Do("GET", "/blocked/words", nil).Map(t)["words"].([]any); len(words) != 0 {
		t.Fatalf("words = %v", words)
	}
	if e.api.Do("GET", "/blocked/pubkeys/"+pkHex, nil).Map(t)["blocked"] != false {
		t.Fatal("a refused body banned the key")
	}
	if n := len(e.api.Do("GET", "/reports", nil, bearer(adminKey)...).Map(t)["reports"].([]any)); n != 0 {
		t.Fatalf("%d reports", n)
	}
	if n := len(e.api.Do("GET", "/admin/audit", nil, bearer(adminKey)...).Map(t)["audit"].([]any)); n != 0 {
		t.Fatalf("%d audit entries", n)
	}
}

// An error message repeats at most a little of what the client sent.
func TestEchoedValuesAreCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	long := strings.Repeat("a", 5000)
	for _, tt := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"DELETE", "/admin/words/" + long, 404, "word_not_found"},
		{"DELETE", "/admin/keys/" + long, 404, "key_not_found"},
		{"GET", "/" + long, 404, "not_found"},
		{"GET", "/blocked/" + long + "/x", 404, "not_found"},
		{"PUT", "/admin/words/" + long, 405, "method_not_allowed"},
	} {
		r := e.api.Do(tt.method, tt.path, nil, bearer(adminKey)...)
		wantStatus(t, r, tt.status, tt.code)
		var body struct{ Message string }
		r.JSON(t, &body)
		if len(body.Message) > 200 || !strings.Contains(body.Message, "aaaa") {
			t.Errorf("%s %.30s…: a %d-byte message: %.300s", tt.method, tt.path, len(body.Message), body.Message)
		}
	}
}

// Reports that arrive as kind-1984 events carry whatever type their author
// wrote; the list answers with a NIP-56 type (case folded, unknown ones as
// "other") and keeps what was written in raw_type.
func TestReportTypesAreNIP56(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	sk, _, _ := newKey()
	_, target, targetNpub := newKey()
	at := time.Now().Add(-time.Hour)
	for i, typ := range []string{"SPAM", "weird-type", "Impersonation", "", "other"} {
		tags := nostr.Tags{{"p", target, typ}}
		if typ == "" {
			tags = nostr.Tags{{"p", target}}
		}
		ev := nostr.Event{Kind: 1984, CreatedAt: nostr.Timestamp(at.Unix() + int64(i)), Tags: tags}
		ev.Sign(sk)
		if _, err := e.st.Events.Save(context.Background(), &ev); err != nil {
			t.Fatal(err)
		}
	}
	r := e.api.Do("GET", "/reports", nil, bearer(adminKey)...)
	wantStatus(t, r, 200, "")
	var got struct {
		Reports []struct {
			ReportedPubKey string  `json:"reported_pubkey"`
			Type           string  `json:"type"`
			RawType        *string `json:"raw_type"`
			Reason         string  `json:"reason"`
		} `json:"reports"`
	}
	r.JSON(t, &got)
	want := []struct {
		typ    string
		raw    any
		reason string
	}{ // newest first
		{"other", "other", "other"},
		{"other", nil, "other"},
		{"impersonation", "Impersonation", "Impersonation"},
		{"other", "weird-type", "weird-type"},
		{"spam", "SPAM", "SPAM"},
	}
	if len(got.Reports) != len(want) {
		t.Fatalf("%d reports: %s", len(got.Reports), r.Body)
	}
	for i, w := range want {
		g := got.Reports[i]
		var raw any
		if g.RawType != nil {
			raw = *g.RawType
		}
		if g.Type != w.typ || raw != w.raw || g.Reason != w.reason || g.ReportedPubKey != targetNpub {
			t.Errorf("report %d: type %q raw_type %v reason %q, want %q %v %q", i, g.Type, raw, g.Reason, w.typ, w.raw, w.reason)
		}
	}
}

// TestContractEdges: openapi.json documents what the shared middleware can
// answer, and every operation answers HEAD, other methods, malformed
// queries, missing keys, trailing and oversized bodies as it says.
func TestContractEdges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{reportsPerMin: 1000})
	_, pkHex, _ := newKey()
	e.api.AssertCommonStatuses()
	e.api.CheckEdges(map[string]string{"pubkey": pkHex, "word": "nothing", "key": "nothing"}, bearer(adminKey)...)
}

// Every operation, openapi.json and health included, is behind the
// per-client rate limit, and documents its 429.
func TestEveryOperationIsRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{ratePerMin: 1, reportsPerMin: 1000})
	wantStatus(t, e.api.Do("GET", "/health", nil), 200, "") // the minute's one request
	_, pkHex, _ := newKey()
	e.api.CheckRateLimited(map[string]string{"pubkey": pkHex, "word": "nothing", "key": "nothing"}, bearer(adminKey)...)
}
