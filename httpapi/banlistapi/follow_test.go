package banlistapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// A follower mirrors its primary's bans (temporary ones with their
// expiry) and blocked words by their changes, serves them from its own
// store, and refuses changes to them with 409 naming the primary, over
// REST and NIP-86 alike.
func TestFollowPrimary(t *testing.T) {
	primary := newEnv(t, options{})
	_, a, aNpub := newKey()
	_, b, _ := newKey()
	wantStatus(t, primary.api.Do("POST", "/admin/ban", map[string]any{"pubkey": a, "reason": "spam"}, bearer(adminKey)...), 200, "")
	wantStatus(t, primary.api.Do("POST", "/admin/temp-ban", map[string]any{"pubkey": b, "reason": "cool off", "expires_at": primary.clock.Now().Unix() + 3600}, bearer(adminKey)...), 200, "")
	wantStatus(t, primary.api.Do("POST", "/admin/words", map[string]any{"word": "scam"}, bearer(adminKey)...), 201, "")

	url := primary.srv.URL + "/banlist"
	f := newEnv(t, options{follow: url})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.svc.Follow(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	wantB, _ := primary.svc.Status(b)
	testkit.WaitFor(t, 10*time.Second, "the follower to mirror the primary", func() bool {
		_, okA := f.svc.Status(a)
		gotB, okB := f.svc.Status(b)
		_, word := f.svc.List().BlockedWord("a scam")
		return okA && okB && gotB.ExpiresAt == wantB.ExpiresAt && word
	})
	if r := f.api.Do("GET", "/blocked/pubkeys/"+aNpub, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"blocked":true`) {
		t.Fatalf("read on the follower: %d %s", r.Status, r.Body)
	}

	for _, w := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/admin/ban", map[string]any{"pubkey": a, "reason": "x"}},
		{"POST", "/admin/temp-ban", map[string]any{"pubkey": a, "reason": "x", "expires_at": f.clock.Now().Unix() + 60}},
		{"POST", "/admin/unban", map[string]any{"pubkey": a}},
		{"POST", "/admin/words", map[string]any{"word": "other"}},
		{"DELETE", "/admin/words/scam", nil},
	} {
		r := f.api.Do(w.method, w.path, w.body, bearer(adminKey)...)
		wantStatus(t, r, http.StatusConflict, "read_only")
		if d, _ := r.Map(t)["details"].(map[string]any); d["primary"] != url {
			t.Fatalf("%s %s: %s does not name the primary", w.method, w.path, r.Body)
		}
	}
	err := f.svc.Management().BanPubKey(context.Background(), "nip86:admin", b, "x")
	if e := outpost.AsError(err); e == nil || e.Kind != outpost.Conflict || e.Details["primary"] != url {
		t.Fatalf("NIP-86 ban on the follower: %v", err)
	}
	// Lists that are this node's own stay writable.
	wantStatus(t, f.api.Do("POST", "/admin/block-ip", map[string]any{"ip": "203.0.113.7", "reason": "flood"}, bearer(adminKey)...), 200, "")

	// Changes on the primary arrive as changes.
	wantStatus(t, primary.api.Do("POST", "/admin/unban", map[string]any{"pubkey": a}, bearer(adminKey)...), 200, "")
	wantStatus(t, primary.api.Do("DELETE", "/admin/words/scam", nil, bearer(adminKey)...), 200, "")
	testkit.WaitFor(t, 10*time.Second, "the follower to mirror the unban", func() bool {
		_, okA := f.svc.Status(a)
		_, word := f.svc.List().BlockedWord("a scam")
		return !okA && !word
	})
	// Every change was applied once: one audit entry each, by the mirror.
	audit, err := f.svc.Audit(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range audit {
		if e.Actor == "follow:"+url {
			actions = append(actions, e.Action)
		}
	}
	if len(actions) != 5 {
		t.Fatalf("the mirror made %d changes, want 5: %v", len(actions), actions)
	}

	// With the primary gone, the follower keeps and serves what it has.
	primary.srv.Close()
	if r := f.api.Do("GET", "/blocked/pubkeys/"+b, nil); r.Status != 200 || !strings.Contains(string(r.Body), `"blocked":true`) {
		t.Fatalf("read with the primary down: %d %s", r.Status, r.Body)
	}
}

func TestFollowSetting(t *testing.T) {
	for _, s := range []string{"ftp://x", "https://u:p@x/banlist", "https://x/banlist?a=1", "x"} {
		if (&banlist.Settings{Follow: s}).Valid() == nil {
			t.Errorf("%s accepted", s)
		}
	}
	if err := (&banlist.Settings{Follow: "https://primary.example/banlist"}).Valid(); err != nil {
		t.Error(err)
	}
}
