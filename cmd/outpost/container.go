package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// containerMemory is the memory limit of the cgroup outpost runs in (a
// container's, a systemd unit's MemoryMax), or 0 when there is none or it
// cannot be read. sys is the root of the file system ("/" in production).
//
// cgroup v2: the lowest memory.max of outpost's cgroup and the ancestors
// visible. cgroup v1: hierarchical_memory_limit in memory.stat, which
// already takes the ancestors into account. In either, when the path that
// /proc/self/cgroup names is not under the mount (a container that sees
// only its own cgroup, mounted at the top), the mount's own files count.
func containerMemory(sys fs.FS) settings.Bytes {
	self, err := fs.ReadFile(sys, "proc/self/cgroup")
	if err != nil {
		return 0
	}
	var limit uint64
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		dir := path.Clean(strings.TrimPrefix(parts[2], "/"))
		switch {
		case parts[0] == "0" && parts[1] == "":
			limit = lower(limit, v2Limit(sys, "sys/fs/cgroup", dir))
		case hasController(parts[1], "memory"):
			limit = lower(limit, v1Limit(sys, "sys/fs/cgroup/memory", dir))
		}
	}
	// The kernel writes "no limit" in v1 as the largest page-aligned count.
	if limit == 0 || limit >= 1<<62 {
		return 0
	}
	return settings.Bytes(limit)
}

// v2Limit is the lowest memory.max from dir up to the mount; 0 for none.
func v2Limit(sys fs.FS, mount, dir string) uint64 {
	var limit uint64
	found := false
	for d := dir; ; d = path.Dir(d) {
		if b, err := fs.ReadFile(sys, path.Join(mount, d, "memory.max")); err == nil {
			found = true
			if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil {
				limit = lower(limit, n) // "max" is no limit
			}
		}
		if d == "." {
			break
		}
	}
	if !found {
		return 0
	}
	return limit
}

// v1Limit is hierarchical_memory_limit of dir, or of the mount itself when
// dir is not under it; 0 for none.
func v1Limit(sys fs.FS, mount, dir string) uint64 {
	b, err := fs.ReadFile(sys, path.Join(mount, dir, "memory.stat"))
	if err != nil {
		if b, err = fs.ReadFile(sys, path.Join(mount, "memory.stat")); err != nil {
			return 0
		}
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "hierarchical_memory_limit "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// lower is the smaller of two limits, where 0 is none.
func lower(a, b uint64) uint64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// fitMemory sizes the memory limit and the cache to a container of memory
// bytes, for those of the two the operator did not set (nor GOMEMLIMIT, for
// the limit): the defaults suit a machine of 1–2 GB, and in a container
// below about 600 MB the heap they allow would outgrow it, so the kernel
// would kill outpost under a burst of writes (with the defaults, in 150 MB,
// after about 20,000 of 200,000 notes). The heap gets two thirds of the
// container; the rest is for what is not heap: the runtime's own, the
// binary's pages, badger's memory-mapped memtable logs and tables (file
// pages the kernel takes back under the container's limit as it needs). The
// cache gets what the limit leaves over memoryOverCache, at most its
// default. When it changes either, it keeps memory in c.fittedTo, for the
// log.
func (c *Config) fitMemory(memory settings.Bytes, limitSet, cacheSet bool) {
	heap := memory / 3 * 2
	if memory == 0 || (c.MemoryLimit != 0 && heap >= c.MemoryLimit) {
		return
	}
	if !cacheSet {
		if cache := min(c.Store.CacheSize, max(heap-memoryOverCache, minFittedCache)); cache != c.Store.CacheSize {
			c.Store.CacheSize, c.fittedTo = cache, memory
		}
	}
	if !limitSet {
		c.MemoryLimit, c.fittedTo = max(heap, c.Store.CacheSize+memoryOverCache), memory
	}
}

// minFittedCache is the smallest cache of events fitMemory gives
// (kv.Settings.CacheSize).
const minFittedCache settings.Bytes = 4 << 20
