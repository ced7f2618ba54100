package faucet

import (
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
)

// TestClaimOutcome: after any end of a confirm, the quote's owner learns
// what became of it, and repeating the confirm answers the same outcome
// without paying twice.
func TestClaimOutcome(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	s, ctx := r.s, r.ctx
	alice := Session{PubKey: "aa", Method: LoginNIP98}
	quote := func(pk string) Quote {
		t.Helper()
		now := s.now()
		q, err := s.storeQuote(Quote{ID: newID("q_"), PubKey: pk, Method: MethodCashu, AmountSats: 40,
			CreatedAt: now.Unix(), ExpiresAt: now.Add(time.Minute).Unix(), State: QuoteOpen}, now)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	status := func(sess Session, id string) ClaimStatus {
		t.Helper()
		st, err := s.ClaimStatus(ctx, sess, id)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	// A confirm cut after it took the claim, before it paid (the process
	// died): the background job fails the claim, in the same transaction
	// gives the quote back, and the quote pays when confirmed again.
	q := quote(alice.PubKey)
	if st := status(alice, q.ID); st.Status != OutcomeOpen || st.Claim != nil {
		t.Fatalf("before the confirm: %+v", st)
	}
	now := s.now()
	cut := Claim{ID: newID("c_"), QuoteID: q.ID, PubKey: alice.PubKey, Method: MethodCashu, AmountSats: 40, FeeReserveSats: 5,
		State: ClaimPaying, IPHash: s.ipHash("203.0.113.9"), Day: day(now), Run: "a process that died", CreatedAt: now.Unix()}
	if err := s.takeClaim(&cut, now); err != nil {
		t.Fatal(err)
	}
	s.ReconcileClaims(ctx)
	st := status(alice, q.ID)
	if st.Status != OutcomeOpen || st.Claim == nil || st.Claim.Status != ClaimFailed || st.Reason == nil {
		t.Fatalf("after the cut confirm was settled: %+v, want open with its failed claim", st)
	}
	before := r.balance()
	res, err := s.Confirm(ctx, alice, "203.0.113.9", q.ID, "")
	if err != nil || res.Status != ClaimPaid || res.Token == nil {
		t.Fatalf("confirming the quote again: %+v %v", res, err)
	}

	// The answer is lost; the claim's status, and the confirm repeated,
	// give the same token, and nothing more is paid.
	st = status(alice, q.ID)
	if st.Status != ClaimPaid || st.Claim == nil || st.Claim.ClaimID != res.ClaimID || st.Claim.Token == nil || *st.Claim.Token != *res.Token {
		t.Fatalf("the status of a paid claim: %+v, want paid with the token", st)
	}
	again, err := s.Confirm(ctx, alice, "203.0.113.9", q.ID, "")
	if err != nil || again.ClaimID != res.ClaimID || again.Token == nil || *again.Token != *res.Token {
		t.Fatalf("the confirm repeated: %+v %v, want the first answer", again, err)
	}
	if got := r.balance(); got > before-40 || got < before-45 {
		t.Fatalf("balance %d after paying 40 from %d once", got, before)
	}

	// Another user's quote is not found; an expired one says so.
	if _, err := s.ClaimStatus(ctx, Session{PubKey: "bb"}, q.ID); outpost.AsError(err) == nil || outpost.AsError(err).Code != "quote_not_found" {
		t.Fatalf("another user's quote: %v", err)
	}
	old := quote("cc")
	s.now = func() time.Time { return now.Add(2 * time.Minute) }
	if st := status(Session{PubKey: "cc"}, old.ID); st.Status != OutcomeExpired || st.Claim != nil {
		t.Fatalf("an expired quote: %+v", st)
	}
}
