package events

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// tombstoneLen is one entry of a deletion key's value: the deletion
// request's id and its expiration.
const tombstoneLen = 32 + 8

func deletionKey(target, pubkey []byte) []byte {
	return join(prefixDeletion, target, pubkey)
}

// deletionTargets are the distinct ids a deletion request names in e tags:
// 64 lowercase hex characters, the only spelling an event id has.
func deletionTargets(tags nostr.Tags) [][32]byte {
	var out [][32]byte
	for _, t := range tags {
		var id [32]byte
		if len(t) >= 2 && t[0] == "e" && parseHex32(t[1], &id) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// tombstoneCost is roughly what writing a deletion request's tombstones
// adds to its write, for the free-space gate.
func tombstoneCost(kind int, tags nostr.Tags) int {
	if kind != nostr.KindDeletion {
		return 0
	}
	return len(deletionTargets(tags)) * (1 + 64 + tombstoneLen + entryOverhead)
}

// addTombstones lists a deletion request under each id it names, in txn
// (other events have none). Listing it again changes nothing.
func addTombstones(txn *kv.Txn, d *decodedEvent) error {
	if int(d.kind) != nostr.KindDeletion {
		return nil
	}
	entry := binary.BigEndian.AppendUint64(slices.Clone(d.id[:]), uint64(d.expiration))
	return eachTombstone(txn, d, func(list []byte) []byte {
		if tombstoneIndex(list, d.id[:]) >= 0 {
			return list
		}
		return append(list, entry...)
	})
}

// removeTombstones takes a deletion request off the list of each id it
// names, in txn, deleting lists left empty.
func removeTombstones(txn *kv.Txn, d *decodedEvent) error {
	if int(d.kind) != nostr.KindDeletion {
		return nil
	}
	return eachTombstone(txn, d, func(list []byte) []byte {
		if i := tombstoneIndex(list, d.id[:]); i >= 0 {
			return slices.Delete(list, i, i+tombstoneLen)
		}
		return list
	})
}

// eachTombstone rewrites the list of each id a deletion request names
// with change. Reading the list makes concurrent writers of one list
// conflict, and update retries them.
func eachTombstone(txn *kv.Txn, d *decodedEvent, change func(list []byte) []byte) error {
	for _, target := range deletionTargets(d.tags) {
		k := deletionKey(target[:], d.pubkey[:])
		var list []byte
		item, err := txn.Get(k)
		switch {
		case err == nil:
			if list, err = item.ValueCopy(nil); err != nil {
				return err
			}
		case !errors.Is(err, kv.ErrNotFound):
			return err
		}
		changed := change(slices.Clone(list))
		switch {
		case bytes.Equal(changed, list):
			continue
		case len(changed) == 0:
			err = txn.Delete(k)
		default:
			err = txn.Set(k, changed)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tombstoneIndex is where the entry of deletion request id starts in list,
// or -1.
func tombstoneIndex(list, id []byte) int {
	for i := 0; i+tombstoneLen <= len(list); i += tombstoneLen {
		if bytes.Equal(list[i:i+32], id) {
			return i
		}
	}
	return -1
}

// Deleted reports whether a stored deletion request (NIP-09, kind 5) by
// pubkey names the event id in an e tag and has not expired (NIP-40): then
// the event id of pubkey is deleted and must not be stored again. It is
// one point lookup, cheap when the answer is no.
func (s *Store) Deleted(ctx context.Context, id, pubkey string) (bool, error) {
	var target, pk [32]byte
	if !parseHex32(id, &target) || !parseHex32(pubkey, &pk) {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := s.now().Unix()
	deleted := false
	err := s.db.View(func(txn *kv.Txn) error {
		item, err := txn.Get(deletionKey(target[:], pk[:]))
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		return item.Value(func(list []byte) error {
			for i := 0; i+tombstoneLen <= len(list); i += tombstoneLen {
				if exp := int64(binary.BigEndian.Uint64(list[i+32:])); exp == 0 || exp > now {
					deleted = true
					return nil
				}
			}
			return nil
		})
	})
	return deleted, err
}
