// Package ecash is the faucet's own Cashu wallet: keysets with v1 and v2
// ids checked by derivation (NUT-01/02), minting (NUT-04), swaps and tokens
// (NUT-00/03), melting with fee return (NUT-05/08), proof states (NUT-07),
// restore (NUT-09), DLEQ checks (NUT-12), deterministic secrets (NUT-13)
// and sends locked to a key (NUT-10/11, p2pk.go).
// gonuts supplies the protocol types and the BDHKE/DLEQ primitives; the
// state around them is kept here.
//
// Every proof the wallet holds, every counter and every operation lives in
// outpost's badger database (kv.PrefixWallet). An operation is written,
// with the proofs it spends reserved and the counters of its outputs taken,
// before its request leaves for the mint; its outcome (outputs in, inputs
// out) is written in one transaction after. An operation a crash (or a lost
// answer) left open is settled from what the mint knows: the signatures it
// made on the operation's outputs (NUT-09), the states of its inputs
// (NUT-07) and its quote's state. So no output is derived twice and the
// balance is what the mint would say it is.
//
// No mint is trusted (verify.go): every signature is checked against its
// DLEQ proof before it is kept, one at a time; one that fails is restored
// or booked lost (and owed, restored later); proofs the mint refuses are
// quarantined and the operation tried again with others.
package ecash

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outpost-relay/outpost/internal/guard/outbound"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/tyler-smith/go-bip39"
)

// Config configures a wallet at one mint.
type Config struct {
	DB          *kv.DB
	MintURL     string // normalised: no trailing slash
	Log         *slog.Logger
	Timeout     time.Duration // per request to the mint; default 15 s
	MeltTimeout time.Duration // per melt request, which waits for Lightning; default 60 s
	HTTP        *http.Client  // default: a client without its own timeout (requests carry theirs)
	Now         func() time.Time
	// UnsureGrace is how long a melt whose request failed without an answer
	// stays pending although the mint says "unpaid": the request may still
	// be on its way. Default 1 minute.
	UnsureGrace time.Duration
	// AllowNoDLEQ lets the wallet use a mint that does not advertise
	// NUT-12, taking its signatures without DLEQ proofs, which cannot be
	// checked. Otherwise such a mint is incompatible.
	AllowNoDLEQ bool
	// Prefix is the store's key prefix of the wallet's records, seed
	// included: wallets under different prefixes share nothing, not even
	// a mint's proofs. Default kv.PrefixWallet (the faucet's).
	Prefix byte
}

// Wallet is a Cashu wallet at one mint. Its methods may be called
// concurrently: operations reserve the proofs they spend, so they run side
// by side.
type Wallet struct {
	cfg  Config
	db   *kv.DB
	mint string
	ns   []byte
	pre  byte // Config.Prefix
	c    *client
	sec  *secrets
	log  *slog.Logger
	now  func() time.Time

	sel     sync.Mutex // one selection transaction at a time
	minting sync.Mutex // one CompleteMint at a time

	mu       sync.Mutex
	keysets  map[string]*Keyset // this mint's, by id
	loadedAt time.Time          // keysets last asked of the mint
	info     mintInfo
	inflight map[string]bool // operations a call of this process is working on
	done     chan struct{}   // closed (and replaced) whenever an operation settles
	closed   bool

	refreshing sync.Mutex // one refreshBalance at a time (see there)
	holdings   atomic.Pointer[Holdings]
}

// Open returns the wallet at cfg.MintURL, creating the wallet's seed on
// first use. It reads only the store: a mint that is down delays
// operations, not this.
func Open(cfg Config) (*Wallet, error) {
	if cfg.DB == nil || cfg.MintURL == "" {
		return nil, errors.New("ecash: DB and MintURL are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.MeltTimeout <= 0 {
		cfg.MeltTimeout = 60 * time.Second
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Transport: outbound.Transport(max(cfg.Timeout, cfg.MeltTimeout))} // each request has its own deadline
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.UnsureGrace <= 0 {
		cfg.UnsureGrace = time.Minute
	}
	if cfg.Prefix == 0 {
		cfg.Prefix = kv.PrefixWallet
	}
	seed, err := loadSeed(cfg.DB, cfg.Prefix, cfg.Now)
	if err != nil {
		return nil, err
	}
	sec, err := newSecrets(seed.Seed)
	if err != nil {
		return nil, err
	}
	w := &Wallet{cfg: cfg, db: cfg.DB, mint: cfg.MintURL, ns: namespace(cfg.MintURL), pre: cfg.Prefix, sec: sec, log: cfg.Log, now: cfg.Now,
		c:        &client{mint: cfg.MintURL, http: cfg.HTTP, timeout: cfg.Timeout, long: cfg.MeltTimeout},
		keysets:  map[string]*Keyset{},
		inflight: map[string]bool{}, done: make(chan struct{})}
	if err := w.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, w.key(kindKeyset), nil, false, func(_ []byte, k Keyset) (bool, error) {
			w.keysets[k.ID] = &k
			return true, nil
		})
	}); err != nil {
		return nil, err
	}
	if err := w.refreshBalance(); err != nil {
		return nil, err
	}
	return w, nil
}

// loadSeed returns the wallet's seed, making one on first use.
func loadSeed(db *kv.DB, prefix byte, now func() time.Time) (seedRecord, error) {
	var rec seedRecord
	err := db.Update(func(txn *kv.Txn) error {
		found, err := kv.GetJSON(txn, kv.Key(prefix, kindSeed), &rec)
		if err != nil || found {
			return err
		}
		entropy, err := bip39.NewEntropy(128)
		if err != nil {
			return err
		}
		m, err := bip39.NewMnemonic(entropy)
		if err != nil {
			return err
		}
		rec = seedRecord{Mnemonic: m, Seed: bip39.NewSeed(m, ""), CreatedAt: now().Unix(), Source: "new"}
		return kv.PutJSON(txn, kv.Key(prefix, kindSeed), rec)
	})
	if err == nil && len(rec.Seed) < 16 {
		err = errors.New("ecash: the stored seed is too short")
	}
	return rec, err
}

// Mint is the wallet's mint URL.
func (w *Wallet) Mint() string { return w.mint }

// Balance is the sum of the wallet's spendable proofs at its mint, in sats.
// Proofs an operation is spending (a melt in flight) are not counted.
func (w *Wallet) Balance() uint64 { return w.holdings.Load().Unspent }

// Holdings are the wallet's sats by where they are.
type Holdings struct {
	Unspent     uint64 // spendable: the balance
	Reserved    uint64 // inputs of operations not settled yet, and proofs held for a melt
	Quarantined uint64 // proofs the mint refused (see Tidy)
	// Returning is what the operations not settled yet will give back to
	// the spendable set if they succeed: their change.
	Returning uint64
}

// Available is what a payout can count on: the balance and the change of
// operations in flight.
func (h Holdings) Available() uint64 { return h.Unspent + h.Returning }

// Holdings reads the wallet's sats by where they are, as last recorded.
func (w *Wallet) Holdings() Holdings { return *w.holdings.Load() }

// Books reads, in one view of the store, the wallet's holdings and the
// Totals no caller books, so they agree with each other.
func (w *Wallet) Books() (h Holdings, t Totals, err error) {
	err = w.db.View(func(txn *kv.Txn) (err error) {
		h, t, err = w.BooksIn(txn)
		return err
	})
	return h, t, err
}

// BooksIn is Books read in txn, for a caller that needs its own records
// and the wallet's from one snapshot.
func (w *Wallet) BooksIn(txn *kv.Txn) (Holdings, Totals, error) {
	var t Totals
	h, err := w.readHoldings(txn)
	if err != nil {
		return h, t, err
	}
	_, err = kv.GetJSON(txn, w.key(kindTotals), &t)
	return h, t, err
}

// refreshBalance records the holdings as the store has them now, after an
// operation wrote. Refreshes run one at a time, so the last to record read
// last: two at once could record their reads in the other order and leave
// the older one, missing the other's operation (TestConcurrentSends saw a
// balance 8 sats short once, with 12 sends at once on a busy machine).
func (w *Wallet) refreshBalance() error {
	w.refreshing.Lock()
	defer w.refreshing.Unlock()
	var h Holdings
	err := w.db.View(func(txn *kv.Txn) (err error) {
		h, err = w.readHoldings(txn)
		return err
	})
	if err == nil {
		w.holdings.Store(&h)
	}
	return err
}

func (w *Wallet) readHoldings(txn *kv.Txn) (Holdings, error) {
	var h Holdings
	if err := kv.EachJSON(txn, w.key(kindProof), nil, false, func(_ []byte, p proofRecord) (bool, error) {
		switch p.State {
		case proofUnspent:
			h.Unspent += p.Proof.Amount
		case proofQuarantined:
			h.Quarantined += p.Proof.Amount
		default:
			h.Reserved += p.Proof.Amount
		}
		return true, nil
	}); err != nil {
		return h, err
	}
	open, err := w.openOps(txn)
	for _, op := range open {
		if op.Own && op.Kind == kindSwap {
			for _, o := range op.Outputs {
				if !o.Send {
					h.Returning += o.Amount
				}
			}
		}
	}
	return h, err
}

// openOps lists the operations not settled yet.
func (w *Wallet) openOps(txn *kv.Txn) ([]Op, error) {
	var open []Op
	err := kv.EachKey(txn, w.key(kindOpenOp), func(id []byte) (bool, error) {
		op, found, err := w.getOp(txn, string(id))
		if found && op.State == OpPending {
			open = append(open, op)
		}
		return true, err
	})
	return open, err
}

// Close stops new operations; those in flight finish on their own.
func (w *Wallet) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// --- keysets ---

// keysetRefresh is how old the keysets may be before an operation asks the
// mint again; Refresh asks every time.
const keysetRefresh = 5 * time.Minute

// Refresh asks the mint for its keysets (and info), adding new keysets
// after checking their ids. An error says whether the mint is unreachable
// or incompatible.
func (w *Wallet) Refresh(ctx context.Context) error {
	info, err := w.c.info(ctx)
	if err != nil {
		return err
	}
	if !info.supports(12) && !w.cfg.AllowNoDLEQ {
		return incompatible(w.mint, "/v1/info", "the mint does not advertise DLEQ proofs (NUT-12), so its signatures cannot be checked")
	}
	list, err := w.c.keysets(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	known := make(map[string]*Keyset, len(w.keysets))
	for id, k := range w.keysets {
		known[id] = k
	}
	w.mu.Unlock()
	var fresh []*Keyset
	seen := map[string]bool{}
	for _, ki := range list {
		if ki.Unit != "sat" {
			continue
		}
		seen[ki.ID] = true
		k, err := w.learn(ctx, ki, known)
		if err != nil {
			return err
		}
		if k != nil {
			known[k.ID] = k
			fresh = append(fresh, k)
		}
	}
	// Keysets the mint no longer lists are no longer active.
	for id, k := range known {
		if !seen[id] && (k.Active || !k.Gone) {
			c := *k
			c.pub, c.Active, c.Gone = nil, false, true
			fresh = append(fresh, &c)
		}
	}
	if err := w.db.Update(func(txn *kv.Txn) error {
		for _, k := range fresh {
			if err := kv.PutJSON(txn, w.key(kindKeyset, k.ID), k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	w.mu.Lock()
	for _, k := range fresh {
		w.keysets[k.ID] = k
	}
	w.info, w.loadedAt = info, w.now()
	w.mu.Unlock()
	_, err = w.activeKeyset()
	return err
}

// Probe asks the mint for its keysets: a light question whose answer
// says whether the mint answers at all, and whether its keysets changed
// (rotated, retired, fees changed), in which case they are loaded again.
func (w *Wallet) Probe(ctx context.Context) error {
	list, err := w.c.keysets(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	changed := len(w.keysets) == 0
	listed := 0
	for _, ki := range list {
		if ki.Unit != "sat" {
			continue
		}
		listed++
		k, ok := w.keysets[ki.ID]
		fee := uint64(0)
		if ki.InputFeePpk != nil && *ki.InputFeePpk > 0 {
			fee = uint64(*ki.InputFeePpk)
		}
		if !ok || k.Gone || k.Active != (ki.Active == nil || *ki.Active) || k.InputFeePpk != fee {
			changed = true
		}
	}
	for _, k := range w.keysets {
		if !k.Gone {
			listed--
		}
	}
	w.mu.Unlock()
	if changed || listed != 0 {
		w.log.Info("ecash: the mint's keysets changed; loading them", "mint", w.mint)
		return w.Refresh(ctx)
	}
	return nil
}

// learn returns what changed of a keyset the mint lists: a new one (its
// keys fetched and its id checked), a known one whose flags changed, or
// nil.
func (w *Wallet) learn(ctx context.Context, ki keysetInfo, known map[string]*Keyset) (*Keyset, error) {
	k := &Keyset{ID: ki.ID, Mint: w.mint, Unit: ki.Unit, Active: ki.Active == nil || *ki.Active, FinalExpiry: ki.FinalExpiry, SeenAt: w.now().Unix()}
	if ki.InputFeePpk != nil && *ki.InputFeePpk > 0 {
		k.InputFeePpk = uint64(*ki.InputFeePpk)
	}
	if old, ok := known[ki.ID]; ok {
		if old.Active == k.Active && old.InputFeePpk == k.InputFeePpk && !old.Gone {
			return nil, nil
		}
		c := *old
		c.pub = nil
		c.Active, c.InputFeePpk, c.Gone = k.Active, k.InputFeePpk, false
		if err := verifyKeyset(&c); err != nil {
			w.log.Warn("ecash: a keyset's new fee does not fit its id; ignoring the change", "keyset", c.ID, "err", err)
			return nil, nil
		}
		return &c, nil
	}
	keys, err := w.c.keys(ctx, ki.ID)
	if err != nil {
		return nil, err
	}
	k.Keys = keys
	if err := verifyKeyset(k); err != nil {
		if k.Active {
			return nil, incompatible(w.mint, "/v1/keys/"+k.ID, "%v", err)
		}
		w.log.Warn("ecash: ignoring an inactive keyset the wallet cannot verify", "keyset", k.ID, "err", err)
		return nil, nil
	}
	if err := w.collides(k, known); err != nil {
		return nil, incompatible(w.mint, "/v1/keysets", "%v", err)
	}
	return k, nil
}

// collides refuses a keyset whose id, short id or (for v1) NUT-13
// derivation index equals a different known keyset's: proofs and secrets
// of the two could not be told apart.
func (w *Wallet) collides(k *Keyset, known map[string]*Keyset) error {
	for _, o := range known {
		if o.ID == k.ID {
			continue
		}
		if ShortID(o.ID) == ShortID(k.ID) {
			return fmt.Errorf("keyset %s has the short id of keyset %s", k.ID, o.ID)
		}
		if len(o.ID) == 16 && len(k.ID) == 16 && v1Index(o.ID) == v1Index(k.ID) {
			return fmt.Errorf("keyset %s would derive the secrets of keyset %s (NUT-13)", k.ID, o.ID)
		}
	}
	return nil
}

// v1Index is keyset_id_int of NUT-13's legacy derivation.
func v1Index(id string) uint64 {
	b, err := hex.DecodeString(id)
	if err != nil {
		return 0
	}
	var n uint64
	for _, c := range b {
		n = (n<<8 | uint64(c)) % (1<<31 - 1)
	}
	return n
}

// ensureKeysets refreshes the keysets when they are stale or missing.
func (w *Wallet) ensureKeysets(ctx context.Context) error {
	w.mu.Lock()
	stale := w.now().Sub(w.loadedAt) > keysetRefresh
	w.mu.Unlock()
	if stale {
		return w.Refresh(ctx)
	}
	_, err := w.activeKeyset()
	return err
}

// activeKeyset is the keyset new outputs are made with: the active sat
// keyset with the lowest input fee, the newest of equals.
func (w *Wallet) activeKeyset() (*Keyset, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best *Keyset
	for _, k := range w.keysets {
		if !k.Active || k.Unit != "sat" {
			continue
		}
		if best == nil || k.InputFeePpk < best.InputFeePpk ||
			(k.InputFeePpk == best.InputFeePpk && (k.SeenAt > best.SeenAt || (k.SeenAt == best.SeenAt && k.ID > best.ID))) {
			best = k
		}
	}
	if best == nil {
		return nil, incompatible(w.mint, "/v1/keysets", "the mint has no active sat keyset this wallet can use")
	}
	return best, nil
}

// keyset returns a known keyset of this mint by full or short id.
func (w *Wallet) keyset(id string) *Keyset {
	w.mu.Lock()
	defer w.mu.Unlock()
	if k, ok := w.keysets[id]; ok {
		return k
	}
	if len(id) != 16 {
		return nil
	}
	var match *Keyset
	for _, k := range w.keysets {
		if ShortID(k.ID) == id {
			if match != nil {
				return nil // ambiguous
			}
			match = k
		}
	}
	return match
}

// Keysets lists the known keysets of the mint, ids sorted.
func (w *Wallet) Keysets() []Keyset {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Keyset, 0, len(w.keysets))
	for _, k := range w.keysets {
		c := *k
		c.pub = nil
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Keyset) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}

func (w *Wallet) supportsChange() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.info.supports(8)
}
