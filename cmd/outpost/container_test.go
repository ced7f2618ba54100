package main

import (
	"testing"
	"testing/fstest"

	"github.com/outpost-relay/outpost/internal/ops/settings"
)

// containerMemory finds the limit where each cgroup version and each way of
// mounting it puts it, and takes "no limit" for none.
func TestContainerMemory(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	stat := func(limit string) *fstest.MapFile {
		return file("cache 0\nrss 0\nhierarchical_memory_limit " + limit + "\nhierarchical_memsw_limit 9223372036854771712\n")
	}
	cases := map[string]struct {
		fs   fstest.MapFS
		want settings.Bytes
	}{
		"no /proc/self/cgroup": {fstest.MapFS{}, 0},
		"v1, outpost's own cgroup": {fstest.MapFS{
			"proc/self/cgroup": file("9:name=systemd:/\n4:memory:/process_api/ab12\n1:cpu:/\n0::/\n"),
			"sys/fs/cgroup/memory/process_api/ab12/memory.stat": stat("157286400"),
			"sys/fs/cgroup/memory/memory.stat":                  stat("9223372036854771712"),
		}, 150 * mib},
		"v1, no limit": {fstest.MapFS{
			"proc/self/cgroup": file("4:memory:/process_api/ab12\n"),
			"sys/fs/cgroup/memory/process_api/ab12/memory.stat": stat("9223372036854771712"),
		}, 0},
		"v1, a container that sees its own cgroup at the mount": {fstest.MapFS{
			"proc/self/cgroup":                 file("5:memory,hugetlb:/docker/4f1e\n"),
			"sys/fs/cgroup/memory/memory.stat": stat("268435456"),
		}, 256 * mib},
		"v2, the lowest of the unit and its slice": {fstest.MapFS{
			"proc/self/cgroup": file("0::/system.slice/outpost.service\n"),
			"sys/fs/cgroup/system.slice/outpost.service/memory.max": file("max\n"),
			"sys/fs/cgroup/system.slice/memory.max":                 file("536870912\n"),
		}, 512 * mib},
		"v2, a container's namespace": {fstest.MapFS{
			"proc/self/cgroup":           file("0::/\n"),
			"sys/fs/cgroup/memory.max":   file("157286400\n"),
			"sys/fs/cgroup/cgroup.procs": file("1\n"),
		}, 150 * mib},
		"v2, max everywhere": {fstest.MapFS{
			"proc/self/cgroup":                 file("0::/a\n"),
			"sys/fs/cgroup/a/memory.max":       file("max\n"),
			"sys/fs/cgroup/memory.max":         file("max\n"),
			"sys/fs/cgroup/memory/memory.stat": stat("157286400"), // another hierarchy: not outpost's
		}, 0},
	}
	for name, c := range cases {
		if got := containerMemory(c.fs); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// Below about 600 MB, what the operator left to the defaults is sized to
// the container; what they set stays, and the result always validates.
// The store knows the container's memory whatever its size.
func TestFitMemory(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	cases := []struct {
		name         string
		container    settings.Bytes
		env          map[string]string
		limit, cache settings.Bytes
		fitted       bool
	}{
		{"no container", 0, nil, 224 * mib, 32 * mib, false},
		{"1 GiB: the defaults fit", 1024 * mib, nil, 224 * mib, 32 * mib, false},
		{"256 MiB", 256 * mib, nil, 256 * mib / 3 * 2, 32 * mib, true},
		{"150 MiB", 150 * mib, nil, 100 * mib, 4 * mib, true},
		{"150 MiB, the limit set", 150 * mib, map[string]string{"OUTPOST_MEMORY_LIMIT": "200MiB"}, 200 * mib, 4 * mib, true},
		{"150 MiB, GOMEMLIMIT set", 150 * mib, map[string]string{"GOMEMLIMIT": "120MiB"}, 224 * mib, 4 * mib, true},
		{"150 MiB, the cache set", 150 * mib, map[string]string{"OUTPOST_CACHE_SIZE": "16MiB"}, 112 * mib, 16 * mib, true},
		{"150 MiB, both set", 150 * mib, map[string]string{"OUTPOST_CACHE_SIZE": "8MiB", "OUTPOST_MEMORY_LIMIT": "0"}, 0, 8 * mib, false},
		{"96 MiB: the floor", 96 * mib, nil, 100 * mib, 4 * mib, true},
	}
	for _, c := range cases {
		cfg, err := parseConfigIn(t, c.env, c.container)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if cfg.MemoryLimit != c.limit || cfg.Store.CacheSize != c.cache || (cfg.fittedTo != 0) != c.fitted {
			t.Errorf("%s: memory limit %v, cache %v, fitted to %v; want %v, %v, fitted %v", c.name, cfg.MemoryLimit, cfg.Store.CacheSize, cfg.fittedTo, c.limit, c.cache, c.fitted)
		}
		if cfg.Store.Container != c.container { // what bounds warming the store
			t.Errorf("%s: the store was told of a container of %v", c.name, cfg.Store.Container)
		}
	}
}
