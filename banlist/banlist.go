// Package banlist is the ban-list service: bans of public keys, blocked words,
// reports, API keys and the audit log, kept in the shared badger store. Every
// change also updates the in-memory policies.BanList the relay enforces, so it
// takes effect at once.
package banlist

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/policies"
)

// Record kinds under kv.PrefixBanlist.
const (
	kindBan         byte = 0x01 // ban id → Ban
	kindBanByPubKey byte = 0x02 // pubkey (32 bytes) → id of its latest ban
	kindWord        byte = 0x03 // normalized word → Word
	kindAPIKey      byte = 0x04 // sha256(key) → APIKey
	kindAudit       byte = 0x05 // audit id → AuditEntry
	kindBannedEvent byte = 0x06 // event id (32 bytes) → BannedEvent

	kindAllowedPubKey byte = 0x07 // pubkey (32 bytes) → AllowedPubKey
	kindKindRule      byte = 0x08 // kind (uint16) → KindRule
	kindBlockedIP     byte = 0x09 // address or CIDR as FormatIPBlock writes it → BlockedIP
	kindAllowedEvent  byte = 0x0A // event id (32 bytes) → AllowedEvent
	kindMirrorPage    byte = 0x0B // page id (12 bytes, as kindBan's) → a page of a primary's bans, packed (mirrorpages.go)
)

// Events is the part of the relay's event store the ban list uses: reports
// are kind-1984 events in it.
type Events interface {
	Find(ctx context.Context, filter nostr.Filter) iter.Seq2[*nostr.Event, error]
}

// Settings are the ban list's operator settings, each bound by cmd/outpost
// to the flag its tag names and that flag's OUTPOST_* environment twin.
type Settings struct {
	AdminKey string `flag:"admin-api-key" usage:"a bootstrap admin API key for the ban-list admin API"`
	Follow   string `flag:"banlist-follow" usage:"mirror the ban list (bans, temporary bans, blocked words) of another outpost, e.g. https://primary.example/banlist; changes to them are then made there (409 here)"`
}

// Valid checks the settings, naming a bad one.
func (s *Settings) Valid() error {
	if s.AdminKey != "" && len(s.AdminKey) < 16 {
		return settings.Errorf("admin-api-key", "must be at least 16 characters")
	}
	if s.Follow != "" {
		if err := ValidFollow(s.Follow); err != nil {
			return settings.Errorf("banlist-follow", "%s", outpost.AsError(err).Message)
		}
	}
	return nil
}

// Config holds what the service needs from outside.
type Config struct {
	Settings
	DB     *kv.DB
	Events Events
	List   *policies.BanList
	// Publish stores an event signed by the service and broadcasts it to
	// the relay's subscribers.
	Publish   func(ctx context.Context, ev *nostr.Event) error
	SecretKey string // service key (hex) that signs reports made over REST
	// Epoch names this node's data: kept in the data dir, new when the
	// data dir is new or restored (cmd/outpost). With the service key it
	// is the identity of the public list's answers, so a follower can tell
	// another server from this one. Default: a new one for this process.
	Epoch      string
	Log        *slog.Logger
	Now        func() time.Time // default time.Now
	MaxReports int              // page size cap for reports and bans; default 1000
	// FollowInterval is how often a follower asks its primary for
	// changes; default followInterval. Tests shorten it so as not to wait
	// out real polls and their back-off.
	FollowInterval time.Duration
	// Publishing says how the list's publication to each publish relay
	// goes (cmd/outpost reads its outbox); nil: there are none.
	Publishing func() []PublishCheck
}

// Service implements the ban list.
type Service struct {
	db          *kv.DB
	events      Events
	list        *policies.BanList
	publish     func(context.Context, *nostr.Event) error
	secretKey   string
	pubKey      string
	log         *slog.Logger
	now         func() time.Time
	adminHash   *[32]byte
	primary     string        // the ban list this one mirrors (Settings.Follow)
	followEvery time.Duration // Config.FollowInterval
	loadedAt    time.Time     // bans that lapsed before are not held (see Changes)
	epoch       string
	following   policies.SyncHealth // of the mirror (Follow)
	resyncFrom  []byte              // the page id from which the whole list being taken is (Follow's goroutine only)
	resyncWhole bool                // and it has written every page of its own so far
	pending     []policies.Ban      // of the whole list being taken, not yet written: less than a page (Follow's goroutine only)
	restoreGC   func()              // puts the collector back after a whole list is taken (followGC)
	paged       atomic.Int64        // bans stored in pages, superseded ones too (mirrorpages.go)
	pagedBefore int64               // of them, those stored before the whole list being taken
	publishing  func() []PublishCheck

	// writes serializes changes so the snapshot is updated in commit order.
	writes sync.Mutex
	lastID atomic.Uint64
}

// New loads the active bans, blocked words, banned events and access lists
// into cfg.List and returns the service.
func New(cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	pk, err := nostr.GetPublicKey(cfg.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("service key: %w", err)
	}
	s := &Service{
		db: cfg.DB, events: cfg.Events, list: cfg.List, publish: cfg.Publish,
		secretKey: cfg.SecretKey, pubKey: pk, log: cfg.Log, now: cfg.Now,
		primary: strings.TrimSuffix(cfg.Follow, "/"), epoch: cfg.Epoch, followEvery: cfg.FollowInterval,
		publishing: cfg.Publishing,
	}
	if s.epoch == "" {
		s.epoch = NewEpoch()
	}
	if cfg.AdminKey != "" {
		h := hashKey(cfg.AdminKey)
		s.adminHash = &h
	}
	return s, s.load()
}

// PubKey is the service's public key (hex).
func (s *Service) PubKey() string { return s.pubKey }

// Identity is what the public list's answers say of their issuer.
func (s *Service) Identity() policies.Identity {
	return policies.Identity{PubKey: s.pubKey, Epoch: s.epoch}
}

// NewEpoch is a new random epoch (see Config.Epoch).
func NewEpoch() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// List is the snapshot the relay enforces.
func (s *Service) List() *policies.BanList { return s.list }

func (s *Service) load() error {
	ctx := context.Background()
	s.loadedAt = s.now()
	now := s.loadedAt.Unix()
	var words []string
	s.list.SetBans(nil)
	bans := 0
	err := s.db.View(func(txn *kv.Txn) error {
		paged, err := s.loadPages(txn, now)
		if err != nil {
			return err
		}
		s.paged.Store(int64(paged))
		if paged > 0 {
			defer s.releasePages() // once the view is done with them
		}
		if _, err := s.loadBans(txn, now, paged > 0); err != nil {
			return err
		}
		bans = s.list.ActiveBans(now)
		return kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindWord}, nil, false, func(_ []byte, w Word) (bool, error) {
			words = append(words, w.Word)
			return true, nil
		})
	})
	bannedEvents, err1 := s.BannedEvents(ctx)
	allowed, err2 := s.AllowedPubKeys(ctx)
	kinds, err3 := s.KindRules(ctx)
	ips, err4 := s.BlockedIPs(ctx)
	if err := errors.Join(err, err1, err2, err3, err4); err != nil {
		return fmt.Errorf("load ban list: %w", err)
	}
	s.list.SetWords(words)
	s.list.SetBannedEvents(ids(bannedEvents, func(e BannedEvent) string { return e.ID }))
	s.list.SetAllowedPubKeys(ids(allowed, func(a AllowedPubKey) string { return a.PubKey }))
	s.list.SetKinds(splitKinds(kinds))
	blocks := make([]policies.BlockedIP, len(ips))
	for i, b := range ips {
		blocks[i] = b.policy()
	}
	s.list.SetBlockedIPs(blocks)
	s.log.Info("ban list loaded", "bans", bans, "words", len(words), "banned_events", len(bannedEvents),
		"allowed_pubkeys", len(allowed), "kind_rules", len(kinds), "blocked_ips", len(ips))
	return nil
}

// loadedBan is what loadBans reads of a Ban: only what the snapshot holds
// and its state, which spares decoding a million ids and actors at start.
type loadedBan struct {
	PubKey    string `json:"pubkey"`
	Reason    string `json:"reason"`
	ExpiresAt *int64 `json:"expires_at"`
	LiftedAt  *int64 `json:"lifted_at"`
}

func (b loadedBan) policy() policies.Ban {
	return Ban{PubKey: b.PubKey, Reason: b.Reason, ExpiresAt: b.ExpiresAt}.policy()
}

// loadBans puts every key's current ban, if active at now, in the
// snapshot, a batch at a time, and returns how many. The current bans are
// those the index of keys names; their records are read in one walk of
// the bans in order of id, the ids the index names sorted first: a
// million bans were a million random reads (15 s at start) and a copy of
// the whole list before it was put. A key's own record is newer than any
// page naming it (putPage): over paged bans, one lifted or lapsed lifts
// the key.
func (s *Service) loadBans(txn *kv.Txn, now int64, paged bool) (int, error) {
	var current [][12]byte
	err := kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindBanByPubKey}, nil, false, func(_ []byte, id string) (bool, error) {
		var raw [12]byte
		if n, err := hex.Decode(raw[:], []byte(id)); err != nil || n != len(raw) {
			return false, fmt.Errorf("ban id %q in the index of keys", id)
		}
		current = append(current, raw)
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	slices.SortFunc(current, func(a, b [12]byte) int { return bytes.Compare(a[:], b[:]) })
	prefix := []byte{kv.PrefixBanlist, kindBan}
	it := txn.NewIterator(kv.IteratorOptions{Prefix: prefix, Values: true})
	defer it.Close()
	batch := make([]policies.Ban, 0, MaxBatch)
	loaded, i := 0, 0
	for it.Rewind(); it.ValidForPrefix(prefix) && i < len(current); it.Next() {
		id := it.Item().Key()[len(prefix):]
		if !bytes.Equal(id, current[i][:]) {
			continue // a ban since replaced
		}
		i++
		var b loadedBan
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &b) }); err != nil {
			return 0, err
		}
		if b.LiftedAt != nil || (b.ExpiresAt != nil && *b.ExpiresAt <= now) { // not StateActive
			if paged {
				s.list.Unban(b.PubKey)
			}
			continue
		}
		if batch = append(batch, b.policy()); len(batch) == cap(batch) {
			s.list.BanMany(batch)
			loaded, batch = loaded+len(batch), batch[:0]
		}
	}
	if i < len(current) {
		return 0, outpost.Errorf(outpost.Internal, "internal", "ban %x missing", current[i])
	}
	s.list.BanMany(batch)
	return loaded + len(batch), nil
}

func ids[T any](records []T, id func(T) string) []string {
	out := make([]string, len(records))
	for i, r := range records {
		out[i] = id(r)
	}
	return out
}

// newID returns a time-ordered id: 8 bytes of unix nanoseconds, strictly
// increasing within the process so records made in the same instant keep
// their order, and 4 random bytes.
func (s *Service) newID(t time.Time) []byte {
	n := uint64(t.UnixNano())
	for {
		last := s.lastID.Load()
		if n <= last {
			n = last + 1
		}
		if s.lastID.CompareAndSwap(last, n) {
			break
		}
	}
	var r [4]byte
	rand.Read(r[:])
	return append(kv.U64(n), r[:]...)
}

// AuditEntry records one admin action.
type AuditEntry struct {
	ID     string          `json:"id"`
	At     int64           `json:"at"`
	Actor  string          `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// audit writes an audit entry inside txn, so it commits with the change.
func (s *Service) audit(txn *kv.Txn, actor, action, target string, before, after any) error {
	at := s.now()
	id := s.newID(at)
	e := AuditEntry{ID: hex.EncodeToString(id), At: at.Unix(), Actor: actor, Action: action, Target: target,
		Before: rawJSON(before), After: rawJSON(after)}
	return kv.PutJSON(txn, kv.Key(kv.PrefixBanlist, kindAudit, id), e)
}

func rawJSON(v any) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// Audit lists audit entries, newest first, at or before until (unix; 0 = now).
func (s *Service) Audit(ctx context.Context, until int64, limit int) ([]AuditEntry, error) {
	out := []AuditEntry{}
	err := s.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindAudit}, seekUntil(kindAudit, until), true,
			func(_ []byte, e AuditEntry) (bool, error) {
				out = append(out, e)
				return len(out) < limit, ctx.Err()
			})
	})
	return out, err
}

// seekUntil is the reverse-iteration start for time-ordered keys at or before until.
func seekUntil(kind byte, until int64) []byte {
	if until <= 0 {
		return nil
	}
	return kv.Key(kv.PrefixBanlist, kind, kv.U64(uint64((until+1)*int64(time.Second)-1)), []byte{0xFF, 0xFF, 0xFF, 0xFF})
}

// HealthChecks are the ban list's figures in its /health, read from the
// snapshot (in memory, so the ban list is served whatever happens), and a
// follower's view of its primary.
type HealthChecks struct {
	ActiveBans   int          `json:"active_bans"`
	BlockedWords int          `json:"blocked_words"`
	Following    *FollowCheck `json:"following,omitempty"`
	// Publishing is one check per publish relay (OUTPOST_PUBLISH_RELAYS).
	Publishing []PublishCheck `json:"publishing,omitempty"`
}

// PublishCheck is how publishing to one relay goes: the events outpost
// signs (the list's pages, mint status) that it took and refused, and why
// it does not hold the current list, if it does not.
type PublishCheck struct {
	Relay     string  `json:"relay"`
	Published uint64  `json:"published"` // events it took since start
	Refused   uint64  `json:"refused"`   // refusals since start, every try counted
	Error     *string `json:"error"`     // unreachable, or what it refuses of the list; null when neither
}

// FollowCheck is how a follower's syncs with its primary go.
type FollowCheck struct {
	Primary       string  `json:"primary"`
	LastSync      *int64  `json:"last_sync"`     // unix; null: none yet
	FailingSince  *int64  `json:"failing_since"` // unix; null while the syncs work
	Error         *string `json:"error"`         // why they fail
	PrimaryPubKey string  `json:"primary_pubkey"`
	PrimaryEpoch  string  `json:"primary_epoch"`
}

// publishHealth adds the publish relays' checks to h: one that is
// unreachable or refuses part of the list degrades it (the relays that
// read the list there get a stale one).
func (s *Service) publishHealth(h *outpost.Health[HealthChecks]) {
	if s.publishing == nil {
		return
	}
	h.Checks.Publishing = s.publishing()
	for _, c := range h.Checks.Publishing {
		if c.Error != nil {
			h.Fail(outpost.HealthDegraded, fmt.Sprintf("publish relay %s: %s", c.Relay, *c.Error))
		}
	}
}

// Health makes no outbound calls and never copies the list: it is asked
// by probes, at any list size. A follower whose syncs have failed for
// longer than policies.FailAfter is degraded: it enforces the last list it
// got, which may be stale.
func (s *Service) Health(ctx context.Context) outpost.Health[HealthChecks] {
	h := outpost.NewHealth(outpost.Version, HealthChecks{ActiveBans: s.list.ActiveBans(s.now().Unix()), BlockedWords: s.list.WordCount()})
	s.publishHealth(&h)
	if s.primary == "" {
		return h
	}
	st := s.following.State(s.now())
	c := &FollowCheck{Primary: s.primary, PrimaryPubKey: st.Server.PubKey, PrimaryEpoch: st.Server.Epoch}
	if !st.LastSuccess.IsZero() {
		c.LastSync = UnixOrNil(st.LastSuccess.Unix())
	}
	if !st.FailingSince.IsZero() {
		c.FailingSince = UnixOrNil(st.FailingSince.Unix())
		why := st.Err.Error()
		c.Error = &why
	}
	h.Checks.Following = c
	if st.Failing {
		h.Fail(outpost.HealthDegraded, fmt.Sprintf("no usable answer from the primary %s since %s (the last list is enforced): %v",
			s.primary, st.FailingSince.UTC().Format(time.RFC3339), st.Err))
	}
	return h
}
