// Package audit proves with real sats that mints pay out: it holds ecash at
// several mints in its own wallets (package ecash under kv.PrefixAuditWallet,
// with their own seed) and, in each round, melts ecash at one mint (the
// payer) to pay a mint quote at another (the payee), recording what each
// step cost and how long it took.
//
// Every step is written before it is tried (round.go), and the wallet
// writes its own operations ahead too, so a round a crash cut short is
// finished after a restart from what the mints say, never tried again
// blindly. The books balance at every moment the store is read:
//
//	deposited_sats + mint_surplus_sats =
//	    held_sats + fees_paid_sats + in_flight_sats + lost_to_mint_sats
package audit

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/cashu/ecash"
	"github.com/outpost-relay/outpost/internal/cashu/minturl"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Settings are the auditor's operator settings.
type Settings struct {
	Enabled    bool          `flag:"audit" usage:"audit listed mints with real sats: melt at one mint to pay a mint quote at another (fund the audit wallet with POST /mintdir/admin/audit/deposit)"`
	Interval   time.Duration `flag:"audit-interval" usage:"how often an audit round runs"`
	MaxPerMint int64         `flag:"audit-max-per-mint" usage:"the most sats the audit wallet holds at one mint; never exceeded"`
	MinSats    int64         `flag:"audit-min-sats" usage:"the least sats one audit round moves (the amount is random between this and --audit-max-sats)"`
	MaxSats    int64         `flag:"audit-max-sats" usage:"the most sats one audit round moves"`
	MinTrust   int           `flag:"audit-min-trust" usage:"a mint whose directory trust score falls below this gets no more sats from the audit wallet, and what it holds is moved out"`
}

// DefaultSettings are the defaults docs/configuration.md lists.
func DefaultSettings() Settings {
	return Settings{Interval: 15 * time.Minute, MaxPerMint: 1000, MinSats: 10, MaxSats: 50, MinTrust: 25}
}

// Valid checks the settings, naming a bad one.
func (s *Settings) Valid() error {
	switch {
	case s.Interval < time.Minute:
		return settings.Errorf("audit-interval", "must be at least 1m")
	case s.MaxPerMint < 1:
		return settings.Errorf("audit-max-per-mint", "must be at least 1")
	case s.MinSats < 1:
		return settings.Errorf("audit-min-sats", "must be at least 1")
	case s.MaxSats < s.MinSats || s.MaxSats > s.MaxPerMint:
		return settings.Errorf("audit-max-sats", "must be between --audit-min-sats and --audit-max-per-mint")
	case s.MinTrust < 0 || s.MinTrust > 100:
		return settings.Errorf("audit-min-trust", "must be from 0 to 100")
	}
	return nil
}

// Config configures an Auditor.
type Config struct {
	Settings
	DB  *kv.DB
	Log *slog.Logger
	Now func() time.Time
	// HTTP is the wallets' client (default: ecash's, with its deadlines).
	HTTP *http.Client
	// Timeout is the deadline of one request to a mint (default 15 s);
	// PayeeWait how long a round waits for the payee to see the payment
	// before it is left to a later resume (default 1 minute).
	Timeout, PayeeWait time.Duration
	// Trust is a mint's trust score in the directory, and whether it has
	// one (a mint it does not list, or one checked for less than a day,
	// has none); nil: none is known.
	Trust func(mintURL string) (score int, ok bool)
	// OnFailure is told of every audit a mint failed (an incident in the
	// directory); nil: nobody is.
	OnFailure func(mintURL string, at time.Time, detail string)
}

// Auditor runs audit rounds on its own wallets.
type Auditor struct {
	cfg Config
	db  *kv.DB
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	wallets map[string]*ecash.Wallet // by mint URL
	round   sync.Mutex               // one round (or resume) at a time
	funding sync.Mutex               // one deposit at a time (the cap)
}

// New returns an auditor; it reads only the store.
func New(cfg Config) (*Auditor, error) {
	if cfg.DB == nil {
		return nil, errors.New("audit: DB is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.PayeeWait <= 0 {
		cfg.PayeeWait = time.Minute
	}
	if cfg.MaxPerMint <= 0 {
		cfg.Settings = DefaultSettings()
	}
	return &Auditor{cfg: cfg, db: cfg.DB, log: cfg.Log, now: cfg.Now, wallets: map[string]*ecash.Wallet{}}, nil
}

// Close closes the wallets.
func (a *Auditor) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.wallets {
		w.Close()
	}
}

// wallet returns the audit wallet at mint, opening it on first use.
func (a *Auditor) wallet(mint string) (*ecash.Wallet, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w, ok := a.wallets[mint]; ok {
		return w, nil
	}
	w, err := ecash.Open(ecash.Config{DB: a.db, MintURL: mint, Log: a.log, HTTP: a.cfg.HTTP, Now: a.now,
		Timeout: a.cfg.Timeout, MeltTimeout: 2 * a.cfg.Timeout, Prefix: kv.PrefixAuditWallet})
	if err != nil {
		return nil, err
	}
	a.wallets[mint] = w
	return w, nil
}

// Mints are the mints the audit wallet was funded at, sorted.
func (a *Auditor) Mints() ([]string, error) {
	var out []string
	err := a.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, kv.Key(kv.PrefixAudit, kindMint), nil, false, func(_ []byte, m mintRecord) (bool, error) {
			out = append(out, m.URL)
			return true, nil
		})
	})
	slices.Sort(out)
	return out, err
}

func normalMint(s string) (string, error) {
	n, err := minturl.Normalize(s)
	if err != nil {
		return "", outpost.Errorf(outpost.Invalid, "invalid_mint_url", "%q is not a mint URL", s)
	}
	return n, nil
}

// ctx bounds one call to a mint: no mint can stretch it.
func (a *Auditor) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, 3*a.cfg.Timeout)
}

// mintFailed is the client's error for a mint that failed a call: what
// kind of failure, not the mint's own words.
func (a *Auditor) mintFailed(mint string, err error) error {
	if outpost.AsError(err) != nil {
		return err
	}
	a.log.Warn("audit: a mint failed", "mint", mint, "err", err)
	return outpost.Errorf(outpost.BadGateway, "mint_failed", "the mint failed: %s", ecash.ProblemOf(err)).With("mint_url", mint)
}
