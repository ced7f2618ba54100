package faucet

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// TestNutzapsNeedAKey: a faucet without a key to sign nutzaps with does not
// offer them, and a quote for one is refused with nutzap_unavailable before
// anything else is looked up; a note is for nutzaps only.
func TestNutzapsNeedAKey(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	for in, want := range map[string]string{sixtyFour: "02" + sixtyFour, "03" + sixtyFour: "03" + sixtyFour,
		" 02" + sixtyFour + " ": "02" + sixtyFour} {
		if got, err := nutzapKey(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
}

// TestNutzapResent: a recorded nutzap event that a relay of the user's did
// not get (it was down) stays in the outbox (in the store, so a restart
// finds it too) and is sent again once due; outpost's relay had it at
// once, and a relay that answered is not asked again.
func TestNutzapResent(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	srv, _ := relaytest.Start(t)
	proxy := testkit.NewProxy(t, strings.TrimPrefix(srv.URL, "http://"))
	theirs := "ws://" + proxy.Addr()
	var own []*nostr.Event
	now := time.Now()
	r.s.cfg.SecretKey, r.s.cfg.RelayURL, r.s.cfg.NetDial = nostr.GeneratePrivateKey(), "ws://outpost.test", (&net.Dialer{}).DialContext
	r.s.cfg.Publish = func(_ context.Context, ev *nostr.Event) error { own = append(own, ev); return nil }
	r.s.now = func() time.Time { return now }

	c := r.claimAs(strings.Repeat("ab", 32), "crashed", nil)
	c.Method, c.Nutzap = MethodNutzap, &NutzapTarget{Key: "02" + sixtyFour, Mint: r.mint.URL, Relays: []string{"ws://outpost.test", theirs}}
	if err := r.s.db.Update(func(txn *kv.Txn) error { return r.s.putClaim(txn, c) }); err != nil {
		t.Fatal(err)
	}
	proxy.Down()
	if _, err := r.s.recordNutzap(c, treasury.Locked{Made: true, Proofs: []string{`{"amount":1}`}, Amount: 1}); err != nil {
		t.Fatal(err)
	}
	r.s.sendNutzap(r.ctx, c.ID)
	res := r.claim(c.ID).Nutzap.result()
	if r.claim(c.ID).State != ClaimPaid || len(own) != 1 || !slices.Equal(res.Relays, []string{"ws://outpost.test"}) || !slices.Equal(res.Pending, []string{theirs}) {
		t.Fatalf("first round: own %d, %+v", len(own), res)
	}
	proxy.Up(t)
	r.s.SendNutzaps(r.ctx) // not due yet
	if res := r.claim(c.ID).Nutzap.result(); len(res.Pending) != 1 {
		t.Fatalf("sent before it was due: %+v", res)
	}
	now = now.Add(time.Hour)
	r.s.SendNutzaps(r.ctx)
	res = r.claim(c.ID).Nutzap.result()
	if len(res.Pending) != 0 || !slices.Contains(res.Relays, theirs) || len(own) != 1 {
		t.Fatalf("again: own %d, %+v", len(own), res)
	}
	if got := len(queryRelay(t, theirs, res.EventID)); got != 1 {
		t.Fatalf("the user's relay holds %d", got)
	}
	var left int
	r.s.db.View(func(txn *kv.Txn) error {
		return kv.EachKey(txn, key(kindNutzapOut), func([]byte) (bool, error) { left++; return true, nil })
	})
	if left != 0 {
		t.Fatalf("%d nutzaps still in the outbox", left)
	}
}

func queryRelay(t *testing.T, url, id string) []*nostr.Event {
	t.Helper()
	c, p := relaytest.Dial(t, url)
	defer p.Freeze()
	return relaytest.Query(t, c, nostr.Filter{IDs: []string{id}})
}
