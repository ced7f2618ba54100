// Package faucet hands out small amounts of test sats to Nostr users: login
// (NIP-98 or a limited npub login), claims as quote-then-confirm with the
// amount locked in the quote, every limit (cooldown per pubkey, per client
// IP, site-wide, daily budget, minimum balance), payouts from a Cashu
// treasury as a token, to a bolt11 invoice or to a Lightning address, and
// deposits. Its records live in the shared badger store under
// kv.PrefixFaucet.
package faucet

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/cashu/lnurl"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/nostr/profiles"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/wot"
)

// Version is the faucet interface's version.
const Version = "1.0.0"

// Payout methods.
const (
	MethodCashu            = "cashu"
	MethodBolt11           = "bolt11"
	MethodLightningAddress = "lightning_address"
	MethodNutzap           = "nutzap" // NIP-61: locked ecash in a kind-9321 event
)

// Methods lists the payout methods.
var Methods = []string{MethodCashu, MethodBolt11, MethodLightningAddress, MethodNutzap}

// Login methods.
const (
	LoginNIP98 = "nip98"
	LoginNPub  = "npub"
)

// TestMint is set when the treasury's mint is the embedded test mint.
type TestMint struct {
	// Pay settles an invoice of the embedded mint's fake Lightning node, as
	// if someone outside paid it.
	Pay func(bolt11 string) error
}

// Config configures the faucet: its settings and what it runs on. Zero
// windows, durations, network and amounts take DefaultSettings' values;
// zero limits and budgets are off.
type Config struct {
	Settings
	DB       *kv.DB
	Treasury *treasury.Treasury
	LNURL    *lnurl.Client
	Profiles *profiles.Fetcher
	TestMint *TestMint
	Log      *slog.Logger
	Now      func() time.Time
	// Trust is the web of trust (default: one of the faucet's own without
	// seeds, which keeps the first-seen times account ages count from).
	Trust *wot.WoT

	SessionTTL     time.Duration // NIP-98 sessions
	NPubSessionTTL time.Duration
	ProfileRefresh time.Duration // at most one /user/refresh-profile per pubkey per this
	ProfileMaxAge  time.Duration // a login refetches a profile older than this
	NIP98Window    time.Duration // reported in /config

	// Nutzaps (NIP-61): SecretKey (the service key, hex) signs them,
	// Publish puts them in outpost's relay (RelayURL, as the relays of a
	// user's 10019 may name it), NetDial (netguard-guarded) reaches the
	// relays users name. Without SecretKey and Publish there are none.
	SecretKey string
	Publish   func(ctx context.Context, ev *nostr.Event) error
	RelayURL  string
	NetDial   func(ctx context.Context, network, addr string) (net.Conn, error)

	// OnClaim is told each time a claim reaches paid, pending or failed
	// (for metrics). It must not block.
	OnClaim func(method, state string)
}

func (c *Config) defaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	defaults := DefaultSettings()
	if c.Network == "" {
		c.Network = defaults.Network
	}
	if len(c.Buckets) == 0 {
		c.Buckets = defaults.Buckets
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Cooldown, defaults.Cooldown)
	def(&c.IPWindow, defaults.IPWindow)
	def(&c.SitewideWindow, defaults.SitewideWindow)
	def(&c.QuoteTTL, defaults.QuoteTTL)
	def(&c.PollInterval, defaults.PollInterval)
	def(&c.SessionTTL, 24*time.Hour)
	def(&c.NPubSessionTTL, time.Hour)
	def(&c.ProfileRefresh, 5*time.Minute)
	def(&c.ProfileMaxAge, time.Hour)
	def(&c.NIP98Window, 60*time.Second)
}

// Service is the faucet.
type Service struct {
	cfg     Config
	db      *kv.DB
	tr      *treasury.Treasury
	log     *slog.Logger
	now     func() time.Time
	run     string // this process's id, recorded in its claims
	ipKey   []byte // HMAC key for client IPs
	refresh *ratelimit.Limiter
	kick    chan struct{}
	mint    mintCheck
	paying  claimSet // the claims calls of this process are paying now, and the token deposits they are taking in
	// Used by Run's goroutine only.
	tidied       time.Time
	depositAsked map[string]time.Time // open deposit → when the mint was last asked
}

// New loads (or creates) the faucet's secret and returns the service.
func New(cfg Config) (*Service, error) {
	cfg.defaults()
	if cfg.DB == nil || cfg.Treasury == nil || cfg.LNURL == nil || cfg.Profiles == nil {
		return nil, errors.New("faucet: DB, Treasury, LNURL and Profiles are required")
	}
	s := &Service{cfg: cfg, db: cfg.DB, tr: cfg.Treasury, log: cfg.Log, now: cfg.Now, run: newID(""),
		refresh: ratelimit.New(1, cfg.ProfileRefresh, cfg.Now), kick: make(chan struct{}, 1), paying: claimSet{ids: map[string]bool{}}}
	if err := s.cfg.trust(); err != nil {
		return nil, err
	}
	key, err := s.loadSecret()
	if err != nil {
		return nil, err
	}
	s.ipKey = key
	return s, nil
}

// claimSet is a set of claim ids that one goroutine at a time may hold.
type claimSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

// take adds id unless it is held already, and says whether it did.
func (cs *claimSet) take(id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.ids[id] {
		return false
	}
	cs.ids[id] = true
	return true
}

// drop lets id go.
func (cs *claimSet) drop(id string) {
	cs.mu.Lock()
	delete(cs.ids, id)
	cs.mu.Unlock()
}

// Record kinds under kv.PrefixFaucet.
const (
	kindSecret      byte = 0x01 // → secret
	kindSession     byte = 0x02 // sha256(token) → Session
	kindUser        byte = 0x03 // pubkey (hex) → User
	kindQuote       byte = 0x04 // quote id → Quote
	kindOpenQuote   byte = 0x05 // pubkey → id of the user's latest open quote
	kindClaim       byte = 0x06 // claim id → Claim
	kindClaimTime   byte = 0x07 // created (U64 unix) + claim id → claim id
	kindUnsettled   byte = 0x08 // claim id → claim id, while paying or pending
	kindCooldown    byte = 0x09 // pubkey → cooldown
	kindIPWindow    byte = 0x0A // HMAC(ip) → window
	kindSitewide    byte = 0x0B // → window
	kindBudget      byte = 0x0C // UTC day → budget
	kindTotals      byte = 0x0D // → totals
	kindDeposit     byte = 0x0E // deposit id → Deposit
	kindOpenDeposit byte = 0x0F // deposit id → deposit id, while its invoice may be paid
	kindRedeemed    byte = 0x10 // Y of a redeemed proof → deposit id
	kindNutzapOut   byte = 0x11 // claim id → claim id, while relays have not all answered its nutzap
)

func key(kind byte, parts ...string) []byte {
	b := make([][]byte, len(parts))
	for i, p := range parts {
		b[i] = []byte(p)
	}
	return kv.Key(kv.PrefixFaucet, kind, b...)
}

type secret struct {
	IPKey string `json:"ip_hmac_key"`
}

func (s *Service) loadSecret() ([]byte, error) {
	var out []byte
	err := s.db.Update(func(txn *kv.Txn) error {
		var sec secret
		found, err := kv.GetJSON(txn, key(kindSecret), &sec)
		if err != nil {
			return err
		}
		if !found {
			b := make([]byte, 32)
			rand.Read(b)
			sec.IPKey = hex.EncodeToString(b)
			if err := kv.PutJSON(txn, key(kindSecret), sec); err != nil {
				return err
			}
		}
		out, err = hex.DecodeString(sec.IPKey)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("faucet secret: %w", err)
	}
	return out, nil
}

// ipHash is how a client IP is kept: an HMAC under a per-install key, so the
// store never holds addresses and the hashes cannot be reversed by trying
// all of them without the key.
func (s *Service) ipHash(ip string) string {
	if ip == "" {
		ip = "unknown"
	}
	m := hmac.New(sha256.New, s.ipKey)
	m.Write([]byte(ip))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// drawAmount picks a claim amount.
func (s *Service) drawAmount() int64 {
	if s.cfg.FixedSats > 0 {
		return s.cfg.FixedSats
	}
	total := 0
	for _, b := range s.cfg.Buckets {
		total += b.Weight
	}
	n := mrand.IntN(max(total, 1))
	for _, b := range s.cfg.Buckets {
		if n < b.Weight {
			return b.AmountSats
		}
		n -= b.Weight
	}
	return s.cfg.Buckets[len(s.cfg.Buckets)-1].AmountSats
}

// Kick makes the background job look at pending work now.
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
