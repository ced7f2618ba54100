package store

import (
	"log/slog"

	"github.com/dgraph-io/badger/v4"
	"github.com/outpost-relay/outpost/settings"
)

// Settings are the store's operator settings, bound by cmd/outpost to the
// flag each tag names and its OUTPOST_* twin. Start from DefaultSettings.
type Settings struct {
	CacheSize settings.Bytes `flag:"cache-size" usage:"badger's block cache: recently read blocks of events and indexes, decompressed; more keeps a larger working set of a big relay in memory"`
}

// DefaultSettings suit a small machine: see badgerOptions and the README
// ("Memory").
func DefaultSettings() Settings { return Settings{CacheSize: 32 << 20} }

// Sizes of badger's memory that are not settings; see badgerOptions.
const (
	memTableSize = 16 << 20
	numMemtables = 3
)

// badgerOptions are badger's defaults sized for a relay on a small machine.
// badger's defaults (64 MiB memtables, five of them, a 256 MiB block cache)
// let a relay that had taken 200,000 notes hold 520 MiB of anonymous memory:
// the memtables' arenas and the cache are Go heap, and the collector lets
// the heap grow to twice what is live. Here: 16 MiB memtables, at most three
// (one being written, two being flushed), a CacheSize block cache (32 MiB
// served the benchmark's REQs from the cache as 256 MiB did), and no
// metrics (badger's expvar counters cost 6% of a REQ's CPU). Value logs are
// 64 MiB: badger creates each as a sparse file of twice its size, 2 GiB by
// default, and only values over 1 MiB go there.
func (s Settings) badgerOptions(path string, log *slog.Logger) badger.Options {
	return badger.DefaultOptions(path).
		WithLogger(badgerLogger{log.With("component", "badger")}).
		WithLoggingLevel(badger.WARNING).
		WithMemTableSize(memTableSize).
		WithNumMemtables(numMemtables).
		WithBlockCacheSize(int64(s.CacheSize)).
		WithMetricsEnabled(false).
		WithValueLogFileSize(64 << 20)
}
