package faucet

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/cashu/minturl"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/nostr/upstream"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Nutzaps (NIP-61): the user's kind-10019 event names the mints they take
// ecash from, the relays to send it to and a P2PK key; the faucet pays
// with proofs locked to that key (NUT-11), in a kind-9321 event signed by
// its service key, which the user's wallet (NIP-60) redeems by itself.

// NIP-61's kinds.
const (
	KindNutzapInfo = 10019
	KindNutzap     = 9321
)

// Bounds on what a user's 10019 can make the faucet do.
const (
	maxNutzapRelays  = 8
	nutzapSendWait   = 5 * time.Second // one relay's OK
	nutzapRetryFirst = 30 * time.Second
	nutzapGiveUp     = 24 * time.Hour // relays not reached by then are not tried again
)

// NutzapTarget is what a nutzap quote pays to, from the user's 10019.
type NutzapTarget struct {
	InfoID string   `json:"info_id"` // the 10019 event
	Key    string   `json:"key"`     // the P2PK key, 02-prefixed
	Mint   string   `json:"mint"`    // the faucet's mint as the 10019 spells it (the u tag)
	Relays []string `json:"relays"`  // outpost's own relay, then the 10019's, checked
	Note   string   `json:"note,omitempty"`
	// Sent is the event, once the locked proofs were made and it was signed.
	Sent *Nutzap `json:"sent,omitempty"`
}

// Nutzap is a claim's kind-9321 event and where it got to. The event is
// recorded before it is sent; relays that did not answer get it again.
type Nutzap struct {
	Event    json.RawMessage   `json:"event"`
	FeeSats  int64             `json:"fee_sats"`
	Acked    []string          `json:"acked,omitempty"`
	Refused  map[string]string `json:"refused,omitempty"` // relay → its OK message
	Attempts int               `json:"attempts"`
	NextAt   int64             `json:"next_at,omitempty"` // when relays not reached are tried again
}

// NutzapResult is the API's view of a nutzap.
type NutzapResult struct {
	EventID string          `json:"event_id"`
	Event   json.RawMessage `json:"event"`
	Mint    string          `json:"mint"`
	// Relays acknowledged the event (OK true): outpost's own, and those of
	// the 10019 that did by the time of the answer.
	Relays  []string          `json:"relays"`
	Refused map[string]string `json:"refused"`
	Pending []string          `json:"pending"` // not reached yet: tried again in the background
}

func errNutzapUnavailable() error {
	return outpost.Errorf(outpost.Unprocessable, "nutzap_unavailable",
		"the faucet cannot pay nutzaps: its mint does not support P2PK-locked ecash (NUT-11) or the faucet has no Nostr key to sign them")
}

// nutzapsAvailable: a key to sign with, a relay to publish to and a mint
// that takes locked ecash (NUT-10/11, from its NUT-06 info).
func (s *Service) nutzapsAvailable() bool {
	return s.cfg.SecretKey != "" && s.cfg.Publish != nil && s.tr.SupportsLocks()
}

// nutzapQuote is the target of a nutzap quote (nil for other methods,
// which take no note).
func (s *Service) nutzapQuote(ctx context.Context, pk, method, note string) (*NutzapTarget, error) {
	if method != MethodNutzap {
		if note != "" {
			return nil, outpost.Errorf(outpost.Invalid, "invalid_request", "event_id is only for method nutzap").With("field", "event_id")
		}
		return nil, nil
	}
	t, err := s.nutzapTarget(ctx, pk, note)
	return &t, err
}

// nutzapTarget reads the user's newest 10019 and checks it against the
// faucet's wallet. note, when set, is the event the claim answers.
func (s *Service) nutzapTarget(ctx context.Context, pk, note string) (NutzapTarget, error) {
	if !s.nutzapsAvailable() {
		return NutzapTarget{}, errNutzapUnavailable()
	}
	ev, failed := s.cfg.Profiles.Latest(ctx, pk, KindNutzapInfo)
	if len(failed) > 0 {
		s.log.Info("faucet nutzap info: some relays failed", "pubkey", pk, "relays", failed)
	}
	if ev == nil {
		return NutzapTarget{}, outpost.Errorf(outpost.Unprocessable, "no_nutzap_info",
			"no kind-10019 event of yours was found (here, on the faucet's relays or on your kind-10002 relays): publish one naming this faucet's mint, your relays and a P2PK key, as a NIP-60 wallet does").
			With("mints", []string{s.tr.MintURL()})
	}
	t := NutzapTarget{InfoID: ev.ID, Note: note, Relays: []string{s.ownRelay()}}
	var key string
	for _, tag := range ev.Tags {
		if len(tag) < 2 {
			continue
		}
		switch tag[0] {
		case "pubkey":
			key = tag[1]
		case "mint":
			if t.Mint == "" && s.takesMint(tag) {
				t.Mint = tag[1]
			}
		case "relay":
			if u, err := upstream.ValidRelayURL(tag[1]); err == nil && len(u) <= 512 && len(t.Relays) <= maxNutzapRelays && !slices.Contains(t.Relays, u) {
				t.Relays = append(t.Relays, u)
			}
		}
	}
	if t.Mint == "" {
		return NutzapTarget{}, outpost.Errorf(outpost.Unprocessable, "nutzap_mint_not_accepted",
			"none of the mints of your kind-10019 event is the faucet's; add %s to it", s.tr.MintURL()).
			With("mints", []string{s.tr.MintURL()}).With("info_id", ev.ID)
	}
	var err error
	if t.Key, err = nutzapKey(key); err != nil {
		return NutzapTarget{}, outpost.Errorf(outpost.Unprocessable, "invalid_p2pk_key",
			"the pubkey tag of your kind-10019 event is not a P2PK public key (64 hex characters, or 66 beginning with 02 or 03)").
			With("info_id", ev.ID)
	}
	return t, nil
}

// takesMint: a 10019 mint tag naming the faucet's mint (in any spelling)
// for sats (no units listed means any).
func (s *Service) takesMint(tag nostr.Tag) bool {
	n, err := minturl.Normalize(tag[1])
	if err != nil || n != s.tr.MintURL() {
		return false
	}
	return len(tag) == 2 || slices.Contains(tag[2:], "sat")
}

// nutzapKey is the P2PK key to lock to: NIP-61 keys are x-only Nostr-style
// keys that are locked to with "02" in front; a compressed key is taken
// as it is.
func nutzapKey(key string) (string, error) {
	key = strings.ToLower(strings.TrimSpace(key))
	if len(key) == 64 {
		key = "02" + key
	}
	return ecash.LockKey(key)
}

// payNutzap pays a nutzap claim: locked proofs by a swap (recorded by the
// wallet), then the signed event, recorded in the claim before any relay
// sees it, then the claim settled paid and the event sent.
func (s *Service) payNutzap(ctx context.Context, c Claim) (ConfirmResult, error) {
	if c.Nutzap == nil {
		return ConfirmResult{}, paymentError(c, s.fail(c, outpost.Errorf(outpost.Internal, "internal", "nutzap claim without a target")))
	}
	l, err := s.tr.SendLocked(ctx, c.ID, c.AmountSats, s.cfg.MinBalanceSats, c.Nutzap.Key)
	if err != nil {
		// A swap whose answer was lost may have been made: its proofs are
		// then the user's. Only one the wallet knows was not made fails.
		made, lerr := s.tr.LockedBy(ctx, c.ID)
		switch {
		case lerr != nil:
			s.log.Info("faucet nutzap: outcome not known yet; the background job settles it", "claim", c.ID, "err", err)
			return c.result(""), nil // paying: answered as pending, the nutzap arrives by itself
		case !made.Made:
			return ConfirmResult{}, paymentError(c, s.failCost(c, err, max(l.FeeSats, made.FeeSats)))
		}
		l = made
	}
	c, err = s.recordNutzap(c, l)
	if err != nil {
		// The proofs are the user's; the background job records the
		// event from the wallet's record and sends it.
		s.log.Error("faucet nutzap: locked proofs made, event not recorded", "claim", c.ID, "err", err)
		return ConfirmResult{}, err
	}
	s.sendNutzap(ctx, c.ID)
	c, err = s.claimByID(c.ID)
	if err != nil {
		return ConfirmResult{}, err
	}
	return c.result(""), nil
}

// recordNutzap signs the event of the locked proofs l, records it in the
// claim and settles the claim paid: from here the payout is the user's,
// and the event waits in the claim until relays have it.
func (s *Service) recordNutzap(c Claim, l treasury.Locked) (Claim, error) {
	tags := make(nostr.Tags, 0, len(l.Proofs)+3)
	for _, p := range l.Proofs {
		tags = append(tags, nostr.Tag{"proof", p})
	}
	tags = append(tags, nostr.Tag{"u", c.Nutzap.Mint}, nostr.Tag{"p", c.PubKey})
	if c.Nutzap.Note != "" {
		tags = append(tags, nostr.Tag{"e", c.Nutzap.Note})
	}
	ev := nostr.Event{Kind: KindNutzap, CreatedAt: nostr.Timestamp(s.now().Unix()), Tags: tags,
		Content: "Test sats from the outpost faucet"}
	if err := ev.Sign(s.cfg.SecretKey); err != nil {
		return c, err
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return c, err
	}
	err = s.db.Record(func(txn *kv.Txn) error {
		cur, found, err := getClaim(txn, c.ID)
		if err != nil || !found || cur.Nutzap == nil || cur.Nutzap.Sent != nil {
			return err
		}
		// The caller sends it now; the background job once it is due.
		cur.Nutzap.Sent = &Nutzap{Event: raw, FeeSats: l.FeeSats, NextAt: s.now().Add(nutzapRetryFirst).Unix()}
		if err := s.putClaim(txn, cur); err != nil {
			return err
		}
		return txn.Set(key(kindNutzapOut, c.ID), []byte(c.ID))
	})
	if err != nil {
		return c, err
	}
	if c, err = s.claimByID(c.ID); err != nil {
		return c, err
	}
	return s.settle(c, ClaimPaid, treasury.Payment{State: treasury.Paid, FeeSats: c.Nutzap.Sent.FeeSats})
}

func (s *Service) claimByID(id string) (Claim, error) {
	var c Claim
	err := s.db.View(func(txn *kv.Txn) (err error) { c, _, err = getClaim(txn, id); return })
	return c, err
}

// settleNutzap settles a nutzap claim a stopped process (or a call that
// ended early) left paying: its event recorded → paid; otherwise the
// wallet says whether the locked proofs were made.
func (s *Service) settleNutzap(ctx context.Context, c Claim) {
	if c.Nutzap != nil && c.Nutzap.Sent != nil {
		s.settle(c, ClaimPaid, treasury.Payment{State: treasury.Paid, FeeSats: c.Nutzap.Sent.FeeSats})
		return
	}
	l, err := s.tr.LockedBy(ctx, c.ID)
	switch {
	case err != nil:
		s.log.Debug("faucet reconcile: nutzap not settled yet", "claim", c.ID, "err", err)
	case !l.Made:
		s.failCost(c, outpost.Errorf(outpost.BadGateway, "payment_failed", "interrupted before paying"), l.FeeSats)
	default:
		if _, err := s.recordNutzap(c, l); err != nil {
			s.log.Error("faucet reconcile: nutzap event not recorded", "claim", c.ID, "err", err)
			return
		}
		s.sendNutzap(ctx, c.ID)
	}
}

// SendNutzaps sends the recorded nutzap events relays have not taken yet
// (after a crash, or relays that did not answer), each when it is due.
func (s *Service) SendNutzaps(ctx context.Context) {
	var ids []string
	s.db.View(func(txn *kv.Txn) error {
		return kv.EachKey(txn, key(kindNutzapOut), func(id []byte) (bool, error) {
			ids = append(ids, string(id))
			return len(ids) < reconcileBatch, nil
		})
	})
	for _, id := range ids {
		if ctx.Err() != nil || !s.paying.take(id) { // a confirm is sending it
			continue
		}
		if c, err := s.claimByID(id); err == nil && c.Nutzap != nil && c.Nutzap.Sent != nil && s.now().Unix() >= c.Nutzap.Sent.NextAt {
			s.sendNutzap(ctx, id)
		}
		s.paying.drop(id)
	}
}

// sendNutzap sends claim id's event to outpost's relay and the 10019's
// relays that have neither taken nor refused it, and records the answers.
// A relay that refuses is not asked again; one that cannot be reached is,
// later, until nutzapGiveUp after the claim.
func (s *Service) sendNutzap(ctx context.Context, id string) {
	c, err := s.claimByID(id)
	if err != nil || c.Nutzap == nil || c.Nutzap.Sent == nil {
		return
	}
	var ev nostr.Event
	if err := json.Unmarshal(c.Nutzap.Sent.Event, &ev); err != nil {
		s.log.Error("faucet nutzap: recorded event unreadable", "claim", id, "err", err)
		return
	}
	todo := c.Nutzap.unsent()
	var mu sync.Mutex
	acked, refused := []string{}, map[string]string{}
	var wg sync.WaitGroup
	for _, r := range todo {
		wg.Go(func() {
			ok, reason, err := s.publishTo(ctx, r, &ev)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				s.log.Info("faucet nutzap: relay not reached", "claim", id, "relay", r, "err", err)
			case ok:
				acked = append(acked, r)
			default:
				refused[r] = reason
				s.log.Info("faucet nutzap: relay refused the event", "claim", id, "relay", r, "reason", reason)
			}
		})
	}
	wg.Wait()
	s.noteSent(c, acked, refused)
}

// unsent lists the relays that have neither taken nor refused the event.
func (t *NutzapTarget) unsent() []string {
	out := []string{}
	for _, r := range t.Relays {
		_, refused := t.Sent.Refused[r]
		if !slices.Contains(t.Sent.Acked, r) && !refused {
			out = append(out, r)
		}
	}
	return out
}

func (s *Service) ownRelay() string {
	if s.cfg.RelayURL == "" {
		return "outpost"
	}
	return s.cfg.RelayURL
}

// publishTo sends ev to relay: outpost's own through its admission, any
// other through a guarded connection.
func (s *Service) publishTo(ctx context.Context, relay string, ev *nostr.Event) (ok bool, reason string, err error) {
	ctx, cancel := context.WithTimeout(ctx, nutzapSendWait)
	defer cancel()
	if relay == s.ownRelay() {
		if err := s.cfg.Publish(ctx, ev); err != nil {
			if e := outpost.AsError(err); e != nil && e.Kind != outpost.Internal {
				return false, e.Message, nil
			}
			return false, "", err
		}
		return true, "", nil
	}
	conn, err := nostrclient.Dial(ctx, relay, nostrclient.Options{NetDial: s.cfg.NetDial, DialTimeout: nutzapSendWait, ReadLimit: 64 << 10})
	if err != nil {
		return false, "", err
	}
	defer conn.Close()
	return conn.Publish(ctx, ev)
}

// noteSent records the answers of one round of sending; the claim leaves
// the outbox when every relay answered, or after nutzapGiveUp.
func (s *Service) noteSent(c Claim, acked []string, refused map[string]string) {
	err := s.db.Record(func(txn *kv.Txn) error {
		cur, found, err := getClaim(txn, c.ID)
		if err != nil || !found || cur.Nutzap == nil || cur.Nutzap.Sent == nil {
			return err
		}
		n := cur.Nutzap.Sent
		n.Acked = append(n.Acked, acked...)
		for r, why := range refused {
			if n.Refused == nil {
				n.Refused = map[string]string{}
			}
			n.Refused[r] = why
		}
		n.Attempts++
		n.NextAt = s.now().Add(min(nutzapRetryFirst<<min(n.Attempts-1, 10), time.Hour)).Unix()
		if err := s.putClaim(txn, cur); err != nil {
			return err
		}
		if len(cur.Nutzap.unsent()) == 0 || s.now().After(time.Unix(cur.CreatedAt, 0).Add(nutzapGiveUp)) {
			return txn.Delete(key(kindNutzapOut, c.ID))
		}
		return nil
	})
	if err != nil {
		s.log.Error("faucet nutzap: could not record the relays' answers; sent again later", "claim", c.ID, "err", err)
	}
}

// result is the API's view of the nutzap; nil before its event exists.
func (t *NutzapTarget) result() *NutzapResult {
	if t == nil || t.Sent == nil {
		return nil
	}
	n := t.Sent
	var ev struct {
		ID string `json:"id"`
	}
	json.Unmarshal(n.Event, &ev) // written by recordNutzap
	r := &NutzapResult{EventID: ev.ID, Event: n.Event, Mint: t.Mint, Relays: append([]string{}, n.Acked...),
		Refused: maps.Clone(n.Refused), Pending: t.unsent()}
	if r.Refused == nil {
		r.Refused = map[string]string{}
	}
	return r
}
