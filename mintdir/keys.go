package mintdir

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Record kinds: the second key byte under kv.PrefixMintdir.
const (
	kMint      byte = 0x01 // + id → Mint (JSON)
	kURL       byte = 0x02 // + normalised URL → id
	kPubKey    byte = 0x03 // + mint pubkey → id
	kSchedule  byte = 0x04 // + id → last check, unix ms (what the prober lists)
	kCheck     byte = 0x05 // + id + unix ms → Check (JSON): every check
	kRollup    byte = 0x06 // + id + level + bucket start (unix s) → rollup (binary)
	kMeta      byte = 0x07 // + id → Metadata (JSON): the current snapshot
	kHistory   byte = 0x08 // + id + unix ms → HistoryEntry (JSON)
	kIncident  byte = 0x09 // + id + started unix ms → Incident (JSON)
	kViewHour  byte = 0x0A // + id + unix hour → views (uvarint)
	kViewDay   byte = 0x0B // + id + unix day → viewDay (JSON)
	kSession   byte = 0x0C // + id + unix day + session hash → nothing
	kReviewURL byte = 0x0D // + normalised URL + 0 + u tag as written → nothing
	kVantage   byte = 0x0E // + monitor pubkey (32 bytes) + id → Vantage (JSON): a followed monitor's latest
)

// perMint lists the record kinds that belong to one mint id, for deleting a
// merged mint's data.
var perMint = []byte{kSchedule, kCheck, kRollup, kMeta, kHistory, kIncident, kViewHour, kViewDay, kSession}

// ID is a mint's stable identifier: random, independent of its URLs.
type ID [16]byte

// NewID returns a random version-4 UUID.
func NewID() ID {
	var id ID
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

// String is the UUID form, e.g. 3f0c...-....
func (id ID) String() string {
	h := hex.EncodeToString(id[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// MarshalText is the UUID form: a Mint's id in JSON and logs.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the UUID form.
func (id *ID) UnmarshalText(b []byte) (err error) {
	*id, err = ParseID(string(b))
	return err
}

// IsZero reports whether id is no id: a Mint's MergedInto when it was not merged.
func (id ID) IsZero() bool { return id == ID{} }

var errBadID = errors.New("not a mint id")

// ParseID parses the UUID form.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, errBadID
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		return id, errBadID
	}
	copy(id[:], b)
	return id, nil
}

func key(kind byte, parts ...[]byte) []byte { return kv.Key(kv.PrefixMintdir, kind, parts...) }

func mintKey(id ID) []byte                    { return key(kMint, id[:]) }
func urlKey(u string) []byte                  { return key(kURL, []byte(u)) }
func pubKeyKey(pk string) []byte              { return key(kPubKey, []byte(pk)) }
func scheduleKey(id ID) []byte                { return key(kSchedule, id[:]) }
func metaKey(id ID) []byte                    { return key(kMeta, id[:]) }
func perMintPrefix(kind byte, id ID) []byte   { return key(kind, id[:]) }
func vantageKey(monitor []byte, id ID) []byte { return key(kVantage, monitor, id[:]) }

// newestBefore reads a mint's records of a kind keyed by time (incidents,
// history) from before `before` (zero: any), newest first, at most limit.
func newestBefore[T any](d *Directory, kind byte, id ID, before time.Time, limit int) ([]T, error) {
	var out []T
	var seek []byte
	if !before.IsZero() {
		seek = timeKey(kind, id, before.Add(-time.Millisecond))
	}
	err := d.db.View(func(txn *kv.Txn) error {
		return kv.EachJSON(txn, perMintPrefix(kind, id), seek, true, func(_ []byte, v T) (bool, error) {
			out = append(out, v)
			return len(out) < limit, nil
		})
	})
	return out, err
}

func timeKey(kind byte, id ID, t time.Time) []byte {
	return key(kind, id[:], kv.U64(uint64(t.UnixMilli())))
}

func u64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
