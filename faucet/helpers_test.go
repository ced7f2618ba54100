package faucet

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/elnosh/gonuts/wallet"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/cashu/lnurl"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/nostr/profiles"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/faucettest"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
)

// rig is a faucet paying from a wallet at a real gonuts mint (mint), and
// a user with a gonuts wallet at a second mint (other), whose invoices the
// faucet pays.
type rig struct {
	t     *testing.T
	ctx   context.Context
	s     *Service
	tr    *treasury.Treasury
	st    *store.Store
	mint  *devmint.Mint
	other *devmint.Mint
	user  *wallet.Wallet
	proxy *testkit.Proxy // between the faucet's wallet and its mint, with rigOptions.Proxy
}

type rigOptions struct {
	DataDir string        // default: a temporary directory
	Store   kv.Settings   // default: kv.DefaultSettings()
	Proxy   bool          // the wallet reaches its mint through a proxy the test can take down
	Poll    time.Duration // the background job's interval
	Deposit int64         // the largest deposit by Lightning (none without)
	FeePpk  uint          // the faucet's mint's input fee (NUT-02)
}

// newRig starts both mints and the faucet, and funds its wallet with
// 500 sats from its mint. Everything stops when the test ends.
func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := &rig{t: t}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b.ctx = ctx
	b.mint, b.other = minttest.Start(t, devmint.Options{InputFeePpk: o.FeePpk}), minttest.Start(t, devmint.Options{})
	b.st = storetest.Open(t, storetest.Options{Dir: o.DataDir, Settings: o.Store, Log: log})
	mintURL := b.mint.URL
	if o.Proxy {
		b.proxy = testkit.NewProxy(t, mintURL[len("http://"):])
		mintURL = "http://" + b.proxy.Addr()
	}
	b.tr = faucettest.Treasury(t, b.st, mintURL, log, 2*time.Second)
	t.Cleanup(func() { b.tr.Close(context.Background()) })
	var err error
	b.s, err = New(Config{DB: b.st.DB, Treasury: b.tr, LNURL: lnurl.New(lnurl.Options{}), Profiles: &profiles.Fetcher{}, Log: log,
		Settings: Settings{Enabled: true, MaxFeeSats: 5, DailyBudgetSats: 1000, QuoteTTL: time.Minute, PollInterval: o.Poll,
			DepositMinSats: min(1, o.Deposit), DepositMaxSats: o.Deposit},
		TestMint: &TestMint{Pay: b.mint.Node.PayInvoice}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.s.Fund(ctx, 500); err != nil {
		t.Fatal(err)
	}
	b.user = minttest.Wallet(t, b.other.URL)
	return b
}

// invoice is a mint quote of the user's at the other mint: its invoice for
// amount sats, which the user can mint once it is paid.
func (b *rig) invoice(amount uint64) (quote, bolt11 string) {
	b.t.Helper()
	q, err := b.user.RequestMint(amount, b.other.URL)
	if err != nil {
		b.t.Fatal(err)
	}
	return q.Quote, q.Request
}

// claimAs writes a claim as Confirm does, by pubkey pk, with its
// reservations, in state paying, owned by the process run: with a melt
// quote, a bolt11 claim; without, a token payout.
func (b *rig) claimAs(pk, run string, mq *treasury.MeltQuote) Claim {
	b.t.Helper()
	s := b.s
	now := s.now()
	c := Claim{ID: newID("c_"), QuoteID: newID("q_"), PubKey: pk, Method: MethodBolt11, AmountSats: 40, FeeReserveSats: 5,
		State: ClaimPaying, IPHash: s.ipHash("203.0.113.9"), Day: day(now), Run: run, MeltQuote: mq, CreatedAt: now.Unix(), AttemptedAt: now.Unix()}
	if mq == nil {
		c.Method = MethodCashu
	}
	err := s.db.Update(func(txn *kv.Txn) error {
		l, err := s.readLimits(txn, pk, c.IPHash, now)
		if err != nil {
			return err
		}
		if err := s.reserve(txn, l, &c, now); err != nil {
			return err
		}
		if err := s.putClaim(txn, c); err != nil {
			return err
		}
		if err := txn.Set(key(kindClaimTime, string(kv.U64(uint64(now.Unix()))), c.ID), []byte(c.ID)); err != nil {
			return err
		}
		return txn.Set(key(kindUnsettled, c.ID), []byte(c.ID))
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return c
}

// claim is the stored claim id.
func (b *rig) claim(id string) Claim {
	b.t.Helper()
	var c Claim
	if err := b.s.db.View(func(txn *kv.Txn) (err error) { c, _, err = getClaim(txn, id); return }); err != nil {
		b.t.Fatal(err)
	}
	return c
}

// hasCooldown reports whether pk may not claim now.
func (b *rig) hasCooldown(pk string) bool {
	var cd cooldown
	b.s.db.View(func(txn *kv.Txn) error { _, err := kv.GetJSON(txn, key(kindCooldown, pk), &cd); return err })
	return cd.Until > b.s.now().Unix()
}

// balance is the wallet's balance.
func (b *rig) balance() int64 {
	bal, _ := b.tr.Balance()
	return bal
}
