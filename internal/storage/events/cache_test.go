package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
)

func cacheID(i int) []byte {
	sum := sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
	return sum[:]
}

func cacheValue(i, n int) []byte {
	v := make([]byte, n)
	for j := range v {
		v[j] = byte(i + j)
	}
	return v
}

// TestCacheRing puts values of random sizes through a small cache and, after
// each put, checks every cached id gives back exactly its value, the newest
// value is there, the index holds no more entries than fit, and a value too
// big for the cache is refused.
func TestCacheRing(t *testing.T) {
	t.Parallel()
	c := newCache(cacheShards * 64 << 10)
	rng := rand.New(rand.NewPCG(1, 2))
	values := map[string][]byte{}
	for i := range 20000 {
		id, val := cacheID(i), cacheValue(i, rng.IntN(4000))
		values[string(id)] = val
		c.put(id, val)
		if got, ok := c.get(id, nil); !ok || !bytes.Equal(got, val) {
			t.Fatalf("put %d: the value just cached is not given back", i)
		}
		if i%997 != 0 {
			continue
		}
		for si := range c.shards {
			s := &c.shards[si]
			live := uint64(0)
			for id := range s.at {
				got, ok := c.get(id[:], []byte("prefix"))
				if !ok || !bytes.Equal(got[6:], values[string(id[:])]) || string(got[:6]) != "prefix" {
					t.Fatalf("put %d: a cached id gives back the wrong value", i)
				}
				live += uint64(entryHeader + len(values[string(id[:])]))
			}
			if live > s.size {
				t.Fatalf("put %d: shard %d indexes %d bytes of entries in a ring of %d", i, si, live, s.size)
			}
		}
	}
	big := cacheID(-1)
	c.put(big, make([]byte, 9<<10))
	if _, ok := c.get(big, nil); ok {
		t.Fatal("a value of over an eighth of a shard was cached")
	}
}

func TestCacheTooSmallCachesNothing(t *testing.T) {
	t.Parallel()
	c := newCache(1 << 10)
	c.put(cacheID(1), []byte("x"))
	if _, ok := c.get(cacheID(1), nil); ok || c != nil {
		t.Fatal("a cache too small to hold events should be nil and cache nothing")
	}
}

// TestCacheConcurrent reads and writes from several goroutines (run with
// -race): every hit is the value put under that id.
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := newCache(cacheShards * 64 << 10)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var buf []byte
			for i := range 5000 {
				k := (i*7 + g) % 3000
				id := cacheID(k)
				if got, ok := c.get(id, buf[:0]); ok && !bytes.Equal(got, cacheValue(k, 100+k%900)) {
					t.Errorf("id %d: wrong value", k)
					return
				}
				c.put(id, cacheValue(k, 100+k%900))
			}
		})
	}
	wg.Wait()
}
