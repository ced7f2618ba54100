package kv

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"sync"
)

// mapping is one range of /proc/self/maps.
type mapping struct {
	start, end uintptr
	path       string // the file mapped
	key        string // its address range and file: a file mapped again is a new mapping
}

// sharedMappings returns the shared mappings in maps (the text of
// /proc/PID/maps) of files under dir, including files already deleted.
func sharedMappings(maps []byte, dir string) []mapping {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// address perms offset dev inode path; the path alone may hold spaces
		f := strings.SplitN(sc.Text(), " ", 6)
		if len(f) < 6 || len(f[1]) != 4 || f[1][3] != 's' {
			continue
		}
		path := strings.TrimLeft(f[5], " ")
		if !strings.HasPrefix(path, prefix) {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, mapping{uintptr(start), uintptr(end), path, f[0] + " " + path})
	}
	return out
}

// releasedMappings remembers which mappings ReleasePages gave back, so it
// gives back each only once: what is resident in it afterwards was read
// again, and is the relay's working set.
type releasedMappings struct {
	mu   sync.Mutex
	done map[string]bool
}

// fresh returns the mappings of now not given back before, and forgets
// those no longer mapped. Call it with mu held.
func (r *releasedMappings) fresh(now []mapping) []mapping {
	var out []mapping
	seen := make(map[string]bool, len(now))
	for _, m := range now {
		seen[m.key] = true
		if !r.done[m.key] {
			out = append(out, m)
		}
	}
	for k := range r.done {
		if !seen[k] {
			delete(r.done, k)
		}
	}
	return out
}

// mark records m as given back. Call it with mu held.
func (r *releasedMappings) mark(m mapping) {
	if r.done == nil {
		r.done = make(map[string]bool)
	}
	r.done[m.key] = true
}
