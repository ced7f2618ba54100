package audit_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit/hostile"
)

// rotating is a gonuts mint behind a proxy that can restart it with its
// next keyset: the new one active, every other inactive (devmint
// KeysetIndex), at the same URL.
type rotating struct {
	t     *testing.T
	px    *hostile.Proxy
	node  *devmint.Node
	dir   string
	mu    sync.Mutex
	mint  *devmint.Mint
	index uint32
}

func newRotating(t *testing.T, network *devmint.Network) *rotating {
	node, err := network.NewNode("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	r := &rotating{t: t, node: node, dir: filepath.Join(t.TempDir(), "mint")}
	r.start()
	r.px = hostile.New(t, r.mint.URL)
	t.Cleanup(func() { r.mu.Lock(); r.mint.Close(); r.mu.Unlock() })
	return r
}

func (r *rotating) start() {
	m, err := devmint.Start(devmint.Options{Dir: r.dir, Node: r.node, KeysetIndex: r.index})
	if err != nil {
		r.t.Error(err)
		return
	}
	r.mint = m
}

// rotate restarts the mint with its next keyset.
func (r *rotating) rotate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mint.Close()
	r.index++
	r.start()
}

// TestKeysetRotatedMidRound: a mint that rotates its keyset in the middle
// of a round (a new active keyset, the old one inactive), as the payee
// between its quote and the mint, or as the payer between its melt quote
// and the swap that makes the melt's inputs: it still honours the old
// keyset's proofs, so the round ends ok with nothing lost, the books
// balanced.
func TestKeysetRotatedMidRound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, route string
		payee       bool
	}{{"payee", "/v1/mint/bolt11", true}, {"payer", "/v1/swap", false}} {
		t.Run(c.name, func(t *testing.T) {
			network := &devmint.Network{}
			rot := newRotating(t, network)
			other := onNetwork(t, network, devmint.Options{})
			st := openStore(t, t.TempDir())
			defer st.Close()
			a := newAuditor(t, st, nil)
			fundAt(t, a, rot.px.URL, rot.node, 100)
			fundAt(t, a, other.URL, other.Node, 100)
			rot.px.Add(hostile.Rule{Route: c.route, Fault: hostile.Call, Call: rot.rotate, Times: 1})
			payer, payee := rot.px.URL, other.URL
			if c.payee {
				payer, payee = payee, payer
			}
			r, err := a.Audit(ctxT(t), payer, payee, 10)
			if err != nil || r.Outcome != audit.OutcomeOK {
				t.Fatalf("round: %+v %v", r, err)
			}
			if rot.px.Applied(c.route) != 1 {
				t.Fatal("the mint never rotated")
			}
			h := balanced(t, a)
			if h.Books.LostToMintSats != 0 || h.Books.InFlightSats != 0 || h.Books.HeldSats+h.Books.FeesPaidSats != 200 {
				t.Fatalf("books: %+v", h.Books)
			}
			if err := a.CheckHoldings(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			if m := mintHolding(t, a, rot.px.URL); m.Flag != nil {
				t.Fatalf("the rotated mint is flagged: %+v", m.Flag)
			}
		})
	}
}

// TestKeysetRotatedOldRefused: a payer that rotates its keyset between its
// melt quote and the melt and then refuses the old keyset's proofs as
// invalid fails the round on the payer and is flagged at once; what it
// refuses is booked lost to it (held again should it take them), the
// books balanced.
func TestKeysetRotatedOldRefused(t *testing.T) {
	t.Parallel()
	network := &devmint.Network{}
	rot := newRotating(t, network)
	other := onNetwork(t, network, devmint.Options{})
	st := openStore(t, t.TempDir())
	defer st.Close()
	a := newAuditor(t, st, nil)
	fundAt(t, a, rot.px.URL, rot.node, 100)
	fundAt(t, a, other.URL, other.Node, 100)
	rot.px.Add(hostile.Rule{Route: "/v1/melt/quote/bolt11", Fault: hostile.Call, Call: rot.rotate, Times: 1})
	for _, route := range []string{"/v1/swap", "/v1/melt/bolt11"} {
		rot.px.Add(hostile.Rule{Route: route, Fault: hostile.Refuse, Code: 10001, Detail: "proofs could not be verified"})
	}
	r, err := a.Audit(ctxT(t), rot.px.URL, other.URL, 10)
	if err != nil || r.Outcome != audit.OutcomeFailed || r.Fault != audit.RolePayer {
		t.Fatalf("round: %+v %v", r, err)
	}
	h := balanced(t, a)
	m := mintHolding(t, a, rot.px.URL)
	if m.Flag == nil || !m.Withdrawn || m.QuarantinedSats == 0 || m.LostSats != m.QuarantinedSats || m.HeldSats+m.LostSats != 100 {
		t.Fatalf("the payer: %+v", m)
	}
	if h.Books.LostToMintSats != m.LostSats || held(h, other.URL) != 100 {
		t.Fatalf("books: %+v", h.Books)
	}
	es, _, _ := a.Entries(rot.px.URL, 0, 10)
	if len(es) != 1 || es[0].Outcome != audit.OutcomeFailed || es[0].Role != audit.RolePayer {
		t.Fatalf("payer entries: %+v", es)
	}
}
