package banlist

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/policies"
)

// Changes is what changed in the public lists since a time: the state now
// of every key and word touched since, so applying it is idempotent.
type Changes struct {
	Added        []policies.Ban // active now, banned (again) since
	Lifted       []string       // pubkeys (hex) unbanned since, with no ban now
	Expired      []policies.Ban // lapsed since
	WordsAdded   []string
	WordsRemoved []string
	At           time.Time // as of when: the next cursor
}

// changesSlack: changes are read from this long before the cursor, so one
// committed while the previous answer was being built is not missed.
// Reporting a change twice is harmless.
const changesSlack = 5 * time.Second

// ErrCursorExpired: the cursor predates what this process can tell apart
// (bans that lapsed before it started are not held).
var ErrCursorExpired = outpost.Errorf(outpost.Gone, "cursor_expired", "the cursor is older than this server's memory of lapsed bans; fetch the whole list again")

// Errors of a cursor given to ChangesSince.
var (
	ErrInvalidCursor = outpost.Errorf(outpost.Invalid, "invalid_cursor", "since must be the cursor of an earlier answer").With("field", "since")
	ErrForeignCursor = outpost.Errorf(outpost.Gone, "cursor_expired", "the cursor was issued by another server, or by this one before its data was restored; fetch the whole list again")
)

// ChangesSince lists what changed since the answer that gave cursor: its
// time, and its epoch if it names one (a bare time is an older outpost's
// cursor, taken as this server's). A cursor of another epoch means nothing
// here: the changes since its time would miss this server's earlier bans.
func (s *Service) ChangesSince(ctx context.Context, cursor string) (Changes, error) {
	since, err := s.cursorTime(cursor)
	if err != nil {
		return Changes{}, err
	}
	return s.Changes(ctx, since)
}

// cursorTime is the time of a cursor of this server's.
func (s *Service) cursorTime(cursor string) (time.Time, error) {
	ms, epoch, dotted := strings.Cut(cursor, ".")
	t, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || t < 0 || (dotted && epoch == "") {
		return time.Time{}, ErrInvalidCursor
	}
	if dotted && epoch != s.epoch {
		return time.Time{}, ErrForeignCursor
	}
	return time.UnixMilli(t), nil
}

// Changes lists what changed since `since`, as of now.
func (s *Service) Changes(ctx context.Context, since time.Time) (Changes, error) {
	now := s.now()
	keys, words, err := s.changed(ctx, since, now)
	if err != nil {
		return Changes{}, err
	}
	c := s.changesOf(keys, now)
	current := map[string]string{}
	for _, w := range s.list.Words() {
		current[policies.NormalizeText(w)] = w
	}
	for n := range words {
		if w, ok := current[n]; ok {
			c.WordsAdded = append(c.WordsAdded, w)
		} else if n != "" {
			c.WordsRemoved = append(c.WordsRemoved, n)
		}
	}
	slices.Sort(c.WordsAdded)
	slices.Sort(c.WordsRemoved)
	return c, nil
}

// ChangesPageSince is a page of the keys' changes since cursor (as
// ChangesSince, words left out): those of the keys changed that sort after
// after ("" from the first), in order of key, at most limit of them
// (added, lifted and expired together). next is the after of the page that
// follows, "" on the last. Each page is computed anew, so a wave of a
// hundred thousand bans is handed out a page at a time, never in one
// answer; a key changed while a reader pages is in a later page, or in the
// next delta since the first page's cursor.
func (s *Service) ChangesPageSince(ctx context.Context, cursor, after string, limit int) (c Changes, next string, err error) {
	since, err := s.cursorTime(cursor)
	if err != nil {
		return Changes{}, "", err
	}
	now := s.now()
	keys, _, err := s.changed(ctx, since, now)
	if err != nil {
		return Changes{}, "", err
	}
	page := make([]string, 0, len(keys))
	for pk := range keys {
		if pk > after {
			page = append(page, pk)
		}
	}
	slices.Sort(page)
	if len(page) > limit {
		page, next = page[:limit], page[limit-1]
	}
	paged := make(map[string]bool, len(page))
	for _, pk := range page {
		paged[pk] = true
	}
	return s.changesOf(paged, now), next, nil
}

// changed is the keys and the words (in their normal form) touched since
// `since` and by now, read from the store and the lapses.
func (s *Service) changed(ctx context.Context, since, now time.Time) (keys, words map[string]bool, err error) {
	if since.Before(s.loadedAt) {
		return nil, nil, ErrCursorExpired
	}
	from := since.Add(-changesSlack)
	keys, words = map[string]bool{}, map[string]bool{}
	err = s.db.View(func(txn *kv.Txn) error {
		// Bans made since, in bulk too (audited once a batch): their ids
		// are times.
		start := kv.Key(kv.PrefixBanlist, kindBan, kv.U64(uint64(from.UnixNano())))
		err := kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindBan}, start, false, func(_ []byte, b Ban) (bool, error) {
			keys[b.PubKey] = true
			return true, ctx.Err()
		})
		if err != nil {
			return err
		}
		// And the bans of a primary's list taken since, kept as pages.
		if err := pagesSince(txn, from, func(pk string) { keys[pk] = true }); err != nil {
			return err
		}
		start = kv.Key(kv.PrefixBanlist, kindAudit, kv.U64(uint64(from.UnixNano())))
		return kv.EachJSON(txn, []byte{kv.PrefixBanlist, kindAudit}, start, false, func(_ []byte, e AuditEntry) (bool, error) {
			switch e.Action {
			case "ban", "unban":
				keys[e.Target] = true
			case "word.add", "word.remove":
				words[policies.NormalizeText(e.Target)] = true
			case "word.batch":
				var b struct{ Words []string }
				json.Unmarshal(e.After, &b)
				for _, w := range b.Words {
					words[policies.NormalizeText(w)] = true
				}
			}
			return true, ctx.Err()
		})
	})
	if err != nil {
		return nil, nil, err
	}
	for _, b := range s.list.Lapsed(from.Unix(), now.Unix()) {
		keys[b.PubKey] = true
	}
	return keys, words, nil
}

// changesOf is the state at now of each of keys, each list in order of key.
func (s *Service) changesOf(keys map[string]bool, now time.Time) Changes {
	c := Changes{At: now}
	for pk := range keys {
		if b, ok := s.list.Banned(pk, now.Unix()); ok {
			c.Added = append(c.Added, b)
		} else if b, held := s.list.Held(pk); held {
			c.Expired = append(c.Expired, b)
		} else {
			c.Lifted = append(c.Lifted, pk)
		}
	}
	byKey := func(a, b policies.Ban) int { return cmp.Compare(a.PubKey, b.PubKey) }
	slices.SortFunc(c.Added, byKey)
	slices.SortFunc(c.Expired, byKey)
	slices.Sort(c.Lifted)
	return c
}
