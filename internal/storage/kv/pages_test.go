package kv

import (
	"slices"
	"testing"
)

func TestSharedMappings(t *testing.T) {
	maps := []byte(`00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/outpost
7f0000000000-7f0001000000 rw-s 00000000 fe:00 1001 /data/badger/000001.sst
7f0001000000-7f0002000000 r--s 00000000 fe:00 1002 /data/badger/000002.sst (deleted)
7f0002000000-7f0003000000 rw-p 00000000 fe:00 1003 /data/badger/000003.sst
7f0003000000-7f0004000000 rw-s 00000000 fe:00 1004 /data/badger2/000004.sst
7f0004000000-7f0005000000 rw-s 00000000 fe:00 1005 /data/badger/with space.vlog
7f0005000000-7f0006000000 rw-p 00000000 00:00 0 
zz-7f0007000000 rw-s 00000000 fe:00 1006 /data/badger/bad.sst
`)
	got := sharedMappings(maps, "/data/badger")
	want := []string{
		"7f0000000000-7f0001000000 /data/badger/000001.sst",
		"7f0001000000-7f0002000000 /data/badger/000002.sst (deleted)",
		"7f0004000000-7f0005000000 /data/badger/with space.vlog",
	}
	var keys []string
	for _, m := range got {
		keys = append(keys, m.key)
		if m.end-m.start != 0x1000000 {
			t.Errorf("%s: %#x bytes, want 0x1000000", m.key, m.end-m.start)
		}
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("got %q\nwant %q", keys, want)
	}
}

// Each mapping is given back once; one mapped again is new.
func TestReleasedMappingsFresh(t *testing.T) {
	var r releasedMappings
	a, b, c := mapping{key: "a"}, mapping{key: "b"}, mapping{key: "c"}
	if got := r.fresh([]mapping{a, b}); len(got) != 2 {
		t.Fatalf("first time: %v", got)
	}
	r.mark(a)
	r.mark(b)
	if got := r.fresh([]mapping{a, b, c}); !slices.Equal(got, []mapping{c}) {
		t.Fatalf("after a and b: %v, want c", got)
	}
	r.fresh([]mapping{b}) // a is gone
	if got := r.fresh([]mapping{a, b}); !slices.Equal(got, []mapping{a}) {
		t.Fatalf("a mapped again: %v, want a", got)
	}
}
