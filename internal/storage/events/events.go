// Package events is outpost's Nostr event store on the shared badger database.
//
// It answers every filter exactly, by construction: ids and pubkeys are keyed
// by their full 32 bytes, tag values by their full value, and a result is
// yielded only after each condition of the filter holds for it. Replaceable
// events are kept one per (kind, pubkey), addressable events one per
// (kind, pubkey, d) where a missing d tag is the address d="". Each event's
// JSON is stored as go-nostr serialises it, so readers can send it as it is.
//
// # Key layout
//
// All keys start with a byte from 0x40 to 0x49, apart from outpost's domain
// records (0x80 and up). ts is created_at encoded so that keys sort newest
// first; the keys of the events and the indexes 0x41–0x45 end with ts and
// the id, so one forward scan of a range yields its events in NIP-01 order
// (created_at descending, then the lowest id first) and several ranges merge
// by comparing those 40 bytes, dropping repeats, and stop at the limit.
//
//	0x40 id         id(32)                                → ts(8)
//	0x41 event      ts(8) id(32)                          → header | JSON
//	0x42 kind       kind(2) ts id                         → empty
//	0x43 author     pubkey(32) ts id                      → empty
//	0x44 authorkind pubkey(32) kind(2) ts id              → empty
//	0x45 tag        name(1) value(v) ts id                → empty
//	0x46 address    kind(2) pubkey(32) d(v)               → ts id
//	0x47 expiry     expiration(8, ascending) id(32)       → empty
//	0x48 deletion   target id(32) pubkey(32)              → (deletion id(32) expiration(8))…
//	0x49 format     (the key alone)                       → version(1)
//
// Events are stored in time order, so the events a scan of any index finds
// lie near each other in the store: a page back through the global feed, a
// thread or a pubkey's notifications read a few neighbouring tables' blocks
// rather than one random place per event, as keying them by id did. The
// event range is also the index
// by time. What looks an event up by id alone (ids filters, duplicates,
// deletions, expiry) reads its ts from the id key first.
//
// The event keys and index keys of an event with a NIP-40 expiration carry
// the badger user meta flagExpires. They carry flagKind and six bits of a
// hash of the event's kind too (see kindMeta), except index keys an outpost
// older than flagKind wrote.
//
// header is version(1) kind(2) created_at(8) expiration(8) pubkey(32).
//
// A deletion key is NIP-09's tombstone: it exists while a stored deletion
// request (kind 5) by pubkey names the target in an e tag, and lists each
// such request with its NIP-40 expiration (0: none). Whether an event was
// deleted by its author is then one point lookup (see Deleted), which
// badger's bloom filters answer for the common "no" without reading a table;
// a key per target and author, rather than per request, is what makes it a
// point lookup, and a list of requests rather than a count keeps writing
// one idempotent and removing one exact. The format key says which layout
// the data is in: this one, format 3, or Open refuses it (see format.go).
//
// Tags are indexed when their name is one byte long and they have a value
// (tag[1]), whatever that value is: empty, short or long. NIP-01 only asks
// relays to index single-letter tags; a filter condition on a longer tag name
// ("#client") never matches, rather than scanning every event.
//
// A tag value v is encoded so that no encoding is a prefix of another (a scan
// for "abc" never reaches "abcdef"): a 64-character lowercase hex value as
// 0xFE and its 32 bytes; a value of up to 253 bytes as its length byte and the
// value; a longer one as 0xFF and its SHA-256. Queries for such long values
// also compare the decoded event's tags, so they stay exact. (Two long d
// values with one SHA-256 would share an address: as likely as two events
// with one id.)
//
// # Reading
//
// A filter is answered from one index: its ids (looked up one by one), else
// the addresses of its authors when all its kinds are replaceable (looked up
// one by one), else its authors (with its kinds: author-kind), else its tag
// condition with the fewest values, else its kinds, else time alone. Of an
// author or author-kind range, only those that may hold an event newer than
// the merge has reached are read (see newest). Every other condition is
// checked on each event found, from its header and, for tags, by looking up
// the event's key in the tag index; an index key's kind hash lets a scan for
// some kinds pass over most others unread. Events past their NIP-40
// expiration are never read out or counted; DeleteExpired removes them. A
// scan of kinds or time reads its events' values walking the event range,
// others look each one up (see eventReader). The
// values of events read are kept in a cache (see Cache), so a hot event costs
// no lookup; the cache may keep an event since deleted, so whether an event
// a filter names by id exists is read from its id key (an address key,
// written and removed with its event, already says that the event it names
// exists).
package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip40"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Key prefixes, one per index (see the package documentation), within kv's
// range for events.
const (
	prefixID         byte = kv.PrefixEventsFirst
	prefixEvent      byte = 0x41
	prefixKind       byte = 0x42
	prefixAuthor     byte = 0x43
	prefixAuthorKind byte = 0x44
	prefixTag        byte = 0x45
	prefixAddress    byte = 0x46
	prefixExpiry     byte = 0x47
	prefixDeletion   byte = 0x48
	prefixFormat     byte = kv.PrefixEventsLast
)

const (
	headerVersion = 1
	headerLen     = 1 + 2 + 8 + 8 + 32
	tailLen       = 8 + 32 // ts and id at the end of the keys 0x41–0x45

	// flagExpires is the badger user meta of the index keys of an event
	// with a NIP-40 expiration: counting by an index that covers a filter
	// reads the event only when it could have expired.
	flagExpires byte = 1
	// flagKind says that the user meta's upper six bits hold a hash of the
	// event's kind: a scan of a tag or author range for some kinds passes
	// over most events of other kinds (a contact list among a pubkey's
	// mentions, a repost in a thread) without reading them. Keys written
	// before it have it clear, and their events are read.
	flagKind byte = 2

	hexValue    = 0xFE
	hashedValue = 0xFF
	maxInline   = 0xFD
)

// Meta is what the relay needs to decide about an event without decoding it.
// ID and PubKey are raw, as stored: readers that check every event compare
// and key maps by them without encoding hex (IDHex, PubKeyHex for a log line).
type Meta struct {
	ID, PubKey [32]byte
	Kind       int
	CreatedAt  nostr.Timestamp
	Expiration nostr.Timestamp // NIP-40, 0 when none
}

// Store is the event store. It is safe for concurrent use.
type Store struct {
	db  *kv.DB
	log *slog.Logger
	now func() time.Time

	cache  *cache // see Cache; nil: none
	newest newest
}

// Open returns the event store on db. A database whose events are in
// another layout than this code's is refused with a *FormatError, and left
// as it is. (ctx is not used: opening does no long work.)
func Open(_ context.Context, db *kv.DB, log *slog.Logger) (*Store, error) {
	s := &Store{db: db, log: log, now: time.Now, newest: newest{seed: maphash.MakeSeed()}}
	if err := s.checkFormat(); err != nil {
		return nil, err
	}
	if err := s.newest.load(db); err != nil {
		return nil, fmt.Errorf("read the newest event of each author: %w", err)
	}
	return s, nil
}

// Cache keeps up to about bytes of recently read events in memory (see
// cache); below 1 MiB, none. Call it once, before the store is used.
func (s *Store) Cache(bytes int) { s.cache = newCache(bytes) }

// Errors of Save for events that cannot be stored.
var (
	ErrInvalid = errors.New("invalid: malformed event")
	ErrBadID   = errors.New("invalid: id is not the hash of the event")
)

// decodedEvent is an event's stored form: the fixed fields in binary and the
// values every index key is derived from.
type decodedEvent struct {
	id, pubkey [32]byte
	kind       uint16
	createdAt  nostr.Timestamp
	expiration nostr.Timestamp
	tags       nostr.Tags
}

// validate checks what the keys rely on and parses it.
func validate(ev *nostr.Event) (decodedEvent, error) {
	var d decodedEvent
	if !parseHex32(ev.ID, &d.id) || !parseHex32(ev.PubKey, &d.pubkey) {
		return d, fmt.Errorf("%w: id and pubkey must be 64 lowercase hex characters", ErrInvalid)
	}
	if ev.Kind < 0 || ev.Kind > math.MaxUint16 {
		return d, fmt.Errorf("%w: kind %d is out of range", ErrInvalid, ev.Kind)
	}
	if !ev.CheckID() {
		return d, ErrBadID
	}
	d.kind, d.createdAt, d.tags = uint16(ev.Kind), ev.CreatedAt, ev.Tags
	d.expiration = expiration(ev.Tags)
	return d, nil
}

// expiration is the NIP-40 expiration, 0 when none. A timestamp at or before
// 1970 is kept as 1, so that it still reads as expired.
func expiration(tags nostr.Tags) nostr.Timestamp {
	exp := nip40.GetExpiration(tags)
	switch {
	case exp == -1:
		return 0
	case exp <= 0:
		return 1
	}
	return exp
}

func (d *decodedEvent) header() []byte {
	h := make([]byte, headerLen)
	h[0] = headerVersion
	binary.BigEndian.PutUint16(h[1:], d.kind)
	binary.BigEndian.PutUint64(h[3:], uint64(d.createdAt))
	binary.BigEndian.PutUint64(h[11:], uint64(d.expiration))
	copy(h[19:], d.pubkey[:])
	return h
}

// IDHex is the event id as go-nostr spells it.
func (m Meta) IDHex() string { return hex.EncodeToString(m.ID[:]) }

// PubKeyHex is the author as go-nostr spells it.
func (m Meta) PubKeyHex() string { return hex.EncodeToString(m.PubKey[:]) }

// meta reads a stored value's header.
func meta(id []byte, val []byte) (Meta, error) {
	if len(id) != 32 || len(val) < headerLen || val[0] != headerVersion {
		return Meta{}, fmt.Errorf("event %x: unknown stored format", id)
	}
	return Meta{
		ID:         [32]byte(id),
		PubKey:     [32]byte(val[19:51]),
		Kind:       int(binary.BigEndian.Uint16(val[1:])),
		CreatedAt:  nostr.Timestamp(binary.BigEndian.Uint64(val[3:])),
		Expiration: nostr.Timestamp(binary.BigEndian.Uint64(val[11:])),
	}, nil
}

// encodeTS encodes created_at so that newer timestamps sort first.
func encodeTS(b []byte, ts nostr.Timestamp) []byte {
	return binary.BigEndian.AppendUint64(b, ^(uint64(ts) ^ 1<<63))
}

func decodeTS(b []byte) nostr.Timestamp {
	return nostr.Timestamp(^binary.BigEndian.Uint64(b) ^ 1<<63)
}

// appendValue appends a tag value's prefix-free encoding; hashed reports
// whether the value had to be hashed.
func appendValue(b []byte, v string) (out []byte, hashed bool) {
	if len(v) == 64 && isLowerHex(v) {
		b, _ = hex.AppendDecode(append(b, hexValue), []byte(v))
		return b, false
	}
	if len(v) <= maxInline {
		b = append(b, byte(len(v)))
		return append(b, v...), false
	}
	sum := sha256.Sum256([]byte(v))
	return append(append(b, hashedValue), sum[:]...), true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseHex32 decodes 64 lowercase hex characters: the only spelling of ids
// and pubkeys that go-nostr produces and that a filter compares equal.
func parseHex32(s string, out *[32]byte) bool {
	if len(s) != 64 || !isLowerHex(s) {
		return false
	}
	hex.Decode(out[:], []byte(s))
	return true
}

func eventKey(tail []byte) []byte { return join(prefixEvent, tail) }

func idKey(id []byte) []byte { return join(prefixID, id) }

// tail is the ts and id that end the event's keys.
func (d *decodedEvent) tail() []byte {
	return append(encodeTS(make([]byte, 0, tailLen), d.createdAt), d.id[:]...)
}

func addressKey(kind uint16, pubkey []byte, d string) []byte {
	k := binary.BigEndian.AppendUint16([]byte{prefixAddress}, kind)
	k = append(k, pubkey...)
	k, _ = appendValue(k, d)
	return k
}

func tagKey(name byte, value string) (k []byte, hashed bool) {
	k = make([]byte, 2, 3+min(len(value), maxInline)) // room for any encoding of value
	k[0], k[1] = prefixTag, name
	return appendValue(k, value)
}

// hasAddress reports whether kind is replaceable or addressable, and so
// stored once per address.
func hasAddress(kind int) bool {
	return nostr.IsReplaceableKind(kind) || nostr.IsAddressableKind(kind)
}

// address is an event's d for its address key: "" for replaceable kinds and
// for addressable events without a d tag.
func address(kind int, tags nostr.Tags) string {
	if nostr.IsAddressableKind(kind) {
		return tags.GetD()
	}
	return ""
}

// indexKeys lists every index key of an event (not its event, id and
// address keys). Saving and deleting both derive the keys from it.
func (d *decodedEvent) indexKeys() [][]byte {
	tail := d.tail()
	kind := binary.BigEndian.AppendUint16(nil, d.kind)
	keys := [][]byte{
		join(prefixKind, kind, tail),
		join(prefixAuthor, d.pubkey[:], tail),
		join(prefixAuthorKind, d.pubkey[:], kind, tail),
	}
	seen := map[string]bool{}
	for _, t := range d.tags {
		if len(t) < 2 || len(t[0]) != 1 {
			continue
		}
		k, _ := tagKey(t[0][0], t[1])
		k = append(k, tail...)
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	if d.expiration != 0 {
		keys = append(keys, join(prefixExpiry, binary.BigEndian.AppendUint64(nil, uint64(d.expiration)), d.id[:]))
	}
	return keys
}

// keyMeta is the user meta of the event's event and index keys.
func (d *decodedEvent) keyMeta() byte {
	if d.expiration != 0 {
		return kindMeta(d.kind) | flagExpires
	}
	return kindMeta(d.kind)
}

// kindMeta is the user meta bits of an index key that say its event's kind:
// flagKind and a 6-bit hash of the kind (Fibonacci hashing, so that the
// kinds clients ask for together rarely share one).
func kindMeta(kind uint16) byte {
	return flagKind | byte(uint32(kind)*2654435761>>26)<<2
}

func join(prefix byte, parts ...[]byte) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 1, n)
	k[0] = prefix
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

// decodeStored parses a stored value back into what its keys derive from.
func decodeStored(id []byte, val []byte) (decodedEvent, *nostr.Event, error) {
	var d decodedEvent
	if _, err := meta(id, val); err != nil {
		return d, nil, err
	}
	var ev nostr.Event
	if err := ev.UnmarshalJSON(val[headerLen:]); err != nil {
		return d, nil, fmt.Errorf("event %x: %w", id, err)
	}
	copy(d.id[:], id)
	copy(d.pubkey[:], val[19:51])
	d.kind = binary.BigEndian.Uint16(val[1:])
	d.createdAt = nostr.Timestamp(binary.BigEndian.Uint64(val[3:]))
	d.expiration = nostr.Timestamp(binary.BigEndian.Uint64(val[11:]))
	d.tags = ev.Tags
	return d, &ev, nil
}

// newer reports whether an event (createdAt, id) wins its address over the
// stored one: NIP-01 keeps the newest, and of two at the same second the one
// with the lowest id.
func newer(createdAt nostr.Timestamp, id []byte, oldCreatedAt nostr.Timestamp, oldID []byte) bool {
	if createdAt != oldCreatedAt {
		return createdAt > oldCreatedAt
	}
	return bytes.Compare(id, oldID) < 0
}
