package events

import (
	"encoding/binary"
	"sync"
)

// cache keeps the stored values (header and JSON) of recently read events
// by id, so that serving a hot event again costs a map lookup and a copy
// instead of a badger point lookup, which was over half of a REQ's CPU.
//
// A cached value never goes stale: an id is the hash of its event, so the
// value under an id never changes, and readers look up only ids their
// snapshot's indexes hold (an event's index keys go in the transaction that
// deletes it). Only deleted events' values may linger until overwritten.
//
// Each shard is a ring of bytes written in order, oldest overwritten first:
// no per-entry allocation, no pointers for the collector to scan, and a
// memory bound that is the ring's size.
type cache struct {
	shards []cacheShard
}

const (
	cacheShards = 16
	entryHeader = 32 + 4 // id, value length
	padding     = ^uint32(0)
)

type cacheShard struct {
	mu   sync.RWMutex
	at   map[[32]byte]uint64 // id → where its entry starts, in bytes ever written
	ring []byte              // allocated on first use
	size uint64
	next uint64 // where the next entry goes, in bytes ever written
	old  uint64 // where the oldest entry still in the ring starts
}

// newCache returns a cache of about bytes, or nil (caching nothing) when
// that leaves a shard too little to hold an event.
func newCache(bytes int) *cache {
	shard := bytes / cacheShards
	if shard < 64<<10 {
		return nil
	}
	c := &cache{shards: make([]cacheShard, cacheShards)}
	for i := range c.shards {
		c.shards[i].size = uint64(shard)
		c.shards[i].at = map[[32]byte]uint64{}
	}
	return c
}

func (c *cache) shard(id []byte) *cacheShard {
	return &c.shards[id[0]%cacheShards] // ids are hashes: evenly spread
}

// get appends id's cached value to dst; false when it is not cached.
func (c *cache) get(id []byte, dst []byte) ([]byte, bool) {
	if c == nil {
		return dst, false
	}
	s := c.shard(id)
	s.mu.RLock()
	defer s.mu.RUnlock()
	pos, ok := s.at[[32]byte(id)]
	if !ok {
		return dst, false
	}
	p := pos % s.size
	n := uint64(binary.LittleEndian.Uint32(s.ring[p+32:]))
	return append(dst, s.ring[p+entryHeader:p+entryHeader+n]...), true
}

// put caches id's value, overwriting the oldest entries to make room.
// Values over an eighth of a shard are not cached: a few huge events would
// push out many ordinary ones.
func (c *cache) put(id, val []byte) {
	if c == nil {
		return
	}
	s := c.shard(id)
	n := uint64(entryHeader + len(val))
	if n > s.size/8 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[[32]byte(id)]; ok {
		return
	}
	if s.ring == nil {
		s.ring = make([]byte, s.size)
	}
	if rest := s.size - s.next%s.size; rest < n { // entries never wrap: pad to the start
		s.evict(s.next + rest)
		if rest >= entryHeader {
			binary.LittleEndian.PutUint32(s.ring[s.next%s.size+32:], padding)
		}
		s.next += rest
	}
	s.evict(s.next + n)
	p := s.next % s.size
	copy(s.ring[p:], id)
	binary.LittleEndian.PutUint32(s.ring[p+32:], uint32(len(val)))
	copy(s.ring[p+entryHeader:], val)
	s.at[[32]byte(id)] = s.next
	s.next += n
}

// evict forgets the oldest entries until the ring has room up to end.
func (s *cacheShard) evict(end uint64) {
	for s.old+s.size < end && s.old < s.next {
		p := s.old % s.size
		rest := s.size - p
		if rest < entryHeader {
			s.old += rest // too short for an entry: padding
			continue
		}
		n := binary.LittleEndian.Uint32(s.ring[p+32:])
		if n == padding {
			s.old += rest
			continue
		}
		if id := [32]byte(s.ring[p:]); s.at[id] == s.old {
			delete(s.at, id)
		}
		s.old += entryHeader + uint64(n)
	}
}
