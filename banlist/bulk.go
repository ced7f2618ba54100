package banlist

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/policies"
)

// BanRequest is one ban of a batch (BanMany).
type BanRequest struct {
	PubKey    string // hex
	Reason    string
	ExpiresAt *int64 // unix; nil: no end
}

// MaxBatch caps the bans of one BanMany: a spam wave is loaded in batches
// of up to this many, each checked whole before any is written.
const MaxBatch = 10_000

// Batch is what BanMany did.
type Batch struct {
	ID     string `json:"id"` // of its audit entry; each ban names it (Ban.Batch)
	Banned int    `json:"banned"`
}

// BanMany bans many keys at once, each as Ban would, with one audit entry
// for the batch (action "ban.batch"); the bans themselves, each naming the
// batch, are every key's history. The batch is checked whole first: one bad
// ban refuses all of them, naming its index, and nothing is written. A key
// given twice takes its last ban. The bans are written a transaction at a
// time, as many as one holds, the first with the audit entry, and each
// transaction is enforced as it commits.
func (s *Service) BanMany(ctx context.Context, actor string, reqs []BanRequest) (Batch, error) {
	if err := s.writable(actor); err != nil {
		return Batch{}, err
	}
	now := s.now()
	if err := validBatch(reqs, now.Unix()); err != nil {
		return Batch{}, err
	}
	reqs = lastOfEach(reqs)
	auditID := s.newID(now)
	batch := Batch{ID: hex.EncodeToString(auditID)}
	for start := 0; start < len(reqs); {
		end := chunkEnd(reqs, start)
		if err := s.banChunk(actor, reqs[start:end], now, auditID, start == 0, len(reqs)); err != nil {
			return batch, err
		}
		batch.Banned, start = end, end
		if err := ctx.Err(); err != nil && end < len(reqs) {
			return batch, err
		}
	}
	return batch, nil
}

func validBatch(reqs []BanRequest, now int64) error {
	if len(reqs) == 0 || len(reqs) > MaxBatch {
		return outpost.Errorf(outpost.Invalid, "invalid_batch", "a batch holds 1 to %d bans, not %d", MaxBatch, len(reqs))
	}
	for i, q := range reqs {
		err := validReason(q.Reason)
		if err == nil && (len(q.PubKey) != 64 || !isHex(q.PubKey)) {
			err = outpost.Errorf(outpost.Invalid, "invalid_pubkey", "pubkey must be 64 hex characters")
		}
		if err == nil && q.ExpiresAt != nil && *q.ExpiresAt <= now {
			err = outpost.Errorf(outpost.Invalid, "invalid_expires_at", "expires_at must be in the future")
		}
		if err != nil {
			e := outpost.AsError(err).With("index", i)
			e.Message = fmt.Sprintf("ban %d: %s", i, e.Message)
			return e
		}
	}
	return nil
}

// lastOfEach keeps each key's last ban, in the order given.
func lastOfEach(reqs []BanRequest) []BanRequest {
	last := make(map[string]int, len(reqs))
	for i, q := range reqs {
		last[q.PubKey] = i
	}
	if len(last) == len(reqs) {
		return reqs
	}
	out := make([]BanRequest, 0, len(last))
	for i, q := range reqs {
		if last[q.PubKey] == i {
			out = append(out, q)
		}
	}
	return out
}

// txnBudget is the bytes of records a batch puts in one transaction: well
// under what badger takes at once (15% of the 16 MiB memtable), since a
// transaction refused as too big part-way would leave a key's old ban
// lifted and its new one unwritten; and small, since badger commits one
// transaction at a time, so the relay's events wait behind each. With 1
// MiB (about 1,000 bans) a transaction, each POST of 1,000 bans in a wave
// held up the note the relay was saving by 5-12 ms; with 64 KiB (about 60)
// none did, and 100,000 bans still load at 41,000/s (53,000 before;
// BENCHMARKS.md §14).
const txnBudget = 64 << 10

// chunkEnd is where the transaction starting at start ends: a ban costs at
// most two records (the new one and the old one it lifts), each with its
// reason escaped at worst six bytes a byte.
func chunkEnd(reqs []BanRequest, start int) int {
	budget := txnBudget
	end := start
	for ; end < len(reqs); end++ {
		if budget -= 2 * (512 + 6*len(reqs[end].Reason)); budget < 0 && end > start {
			break
		}
	}
	return end
}

// banChunk writes one transaction of a batch, with the batch's audit entry
// if it is the first, and enforces it.
func (s *Service) banChunk(actor string, reqs []BanRequest, now time.Time, auditID []byte, first bool, total int) error {
	batch := hex.EncodeToString(auditID)
	bans := make([]policies.Ban, len(reqs))
	var unallowed []string
	return s.update(func(txn *kv.Txn) error {
		unallowed = unallowed[:0]
		for i, q := range reqs {
			ban, _, u, err := s.putBan(txn, actor, q.PubKey, q.Reason, q.ExpiresAt, now, batch)
			if err != nil {
				return err
			}
			bans[i] = ban.policy()
			if u {
				unallowed = append(unallowed, q.PubKey)
			}
		}
		if !first {
			return nil
		}
		e := AuditEntry{ID: batch, At: now.Unix(), Actor: actor, Action: "ban.batch", Target: batch,
			Before: rawJSON(nil), After: rawJSON(map[string]int{"bans": total})}
		return kv.PutJSON(txn, kv.Key(kv.PrefixBanlist, kindAudit, auditID), e)
	}, func() {
		for _, pk := range unallowed {
			s.list.UnallowPubKey(pk)
		}
		s.list.BanMany(bans)
	})
}

// MaxWordBatch caps the words of one AddWords.
const MaxWordBatch = 1000

// WordBatch is what AddWords did.
type WordBatch struct {
	ID    string `json:"id"`    // of its audit entry
	Added []Word `json:"added"` // the words not blocked before
}

// AddWords blocks many words at once, in one transaction with one audit
// entry (action "word.batch", the words added in its after). Words blocked
// already (by their normal form) are left as they are. One bad word
// refuses all of them, naming its index.
func (s *Service) AddWords(ctx context.Context, actor string, words []string) (WordBatch, error) {
	if err := s.writable(actor); err != nil {
		return WordBatch{}, err
	}
	if len(words) == 0 || len(words) > MaxWordBatch {
		return WordBatch{}, outpost.Errorf(outpost.Invalid, "invalid_batch", "a batch holds 1 to %d words, not %d", MaxWordBatch, len(words))
	}
	for i, w := range words {
		if err := validWord(w); err != nil {
			e := outpost.AsError(err).With("index", i)
			e.Message = fmt.Sprintf("word %d: %s", i, e.Message)
			return WordBatch{}, e
		}
	}
	now := s.now()
	auditID := s.newID(now)
	var batch WordBatch
	err := s.update(func(txn *kv.Txn) error {
		batch = WordBatch{ID: hex.EncodeToString(auditID), Added: []Word{}}
		seen := map[string]bool{}
		names := []string{}
		for _, word := range words {
			key := wordKey(word)
			found, err := kv.GetJSON(txn, key, &Word{})
			if err != nil {
				return err
			}
			if found || seen[string(key)] {
				continue
			}
			seen[string(key)] = true
			w := Word{Word: word, AddedAt: now.Unix(), AddedBy: actor}
			if err := kv.PutJSON(txn, key, w); err != nil {
				return err
			}
			batch.Added = append(batch.Added, w)
			names = append(names, word)
		}
		e := AuditEntry{ID: batch.ID, At: now.Unix(), Actor: actor, Action: "word.batch", Target: batch.ID,
			Before: rawJSON(nil), After: rawJSON(map[string][]string{"words": names})}
		return kv.PutJSON(txn, kv.Key(kv.PrefixBanlist, kindAudit, auditID), e)
	}, func() {
		names := make([]string, len(batch.Added))
		for i, w := range batch.Added {
			names[i] = w.Word
		}
		s.list.AddWords(names...)
	})
	return batch, err
}

// ActivePage is a page of the bans active now, in order of key: up to limit
// of those whose key (hex) sorts after after ("" from the first). next is
// the after of the page that follows, "" after the last. The page is read
// from the snapshot, which holds the keys in order, so it costs its own
// size, not the list's.
func (s *Service) ActivePage(ctx context.Context, after string, limit int) (bans []policies.Ban, next string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	bans, next = s.list.Page(after, limit, s.now().Unix())
	return bans, next, nil
}
