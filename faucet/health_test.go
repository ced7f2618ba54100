package faucet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestHealthStaysDegradedInOutage: while the mint refuses connections and
// claims keep coming, health stays degraded. A claim settled from what the
// wallet already knew (its melt was paid before the outage: no question to
// the mint) must not make health ok again: only an answer of the mint does,
// once it is back.
func TestHealthStaysDegradedInOutage(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{Proxy: true, Poll: 50 * time.Millisecond})
	s, tr, ctx := r.s, r.tr, r.ctx
	jobCtx, stop := context.WithCancel(ctx)
	var jobs sync.WaitGroup
	jobs.Go(func() { s.Run(jobCtx) })
	jobs.Go(func() { tr.Watch(jobCtx) })
	t.Cleanup(func() { stop(); jobs.Wait() })

	// A claim whose melt the mint paid, held by a "call" until the outage.
	_, inv := r.invoice(40)
	mq, err := tr.MeltQuote(ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	known := r.claimAs("aa", s.run, &mq)
	s.paying.take(known.ID)
	if p, err := tr.Melt(ctx, mq, 0); err != nil || p.State != treasury.Paid {
		t.Fatalf("melt %+v %v", p, err)
	}

	r.proxy.Down()
	testkit.WaitFor(t, 10*time.Second, "health to say degraded", func() bool { return s.Health(ctx).Status == outpost.HealthDegraded })

	// Claims run through the outage, and health is watched all along.
	var ok atomic.Int64
	claims, claimsDone := context.WithCancel(ctx)
	var load sync.WaitGroup
	for i := range 4 {
		load.Go(func() {
			for n := 0; claims.Err() == nil; n++ {
				s.Quote(claims, Session{PubKey: fmt.Sprintf("%02x%04x", i, n), Method: LoginNIP98}, "203.0.113.7", MethodCashu, "", "")
			}
		})
	}
	load.Go(func() {
		for claims.Err() == nil {
			if s.Health(claims).Status == outpost.HealthOK {
				ok.Add(1)
			}
		}
	})
	s.paying.drop(known.ID) // the background job settles it now, from the wallet's record
	testkit.WaitFor(t, 10*time.Second, "the claim to settle", func() bool { return r.claim(known.ID).State == ClaimPaid })
	if got := s.Health(ctx); got.Status != outpost.HealthDegraded {
		t.Errorf("right after the claim settled: health %s (%s), want degraded", got.Status, got.Checks.Mint)
	}
	claimsDone()
	load.Wait()
	if n := ok.Load(); n > 0 {
		t.Errorf("health said ok %d times while the mint refused connections", n)
	}

	r.proxy.Up(t)
	testkit.WaitFor(t, 10*time.Second, "health to say ok once the mint answers", func() bool { return s.Health(ctx).Status == outpost.HealthOK })
}
