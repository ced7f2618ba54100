package kv_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/events"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// BenchmarkIngest saves notes one by one into a fresh database with
// outpost's 16 MiB memtables and with badger's default 64 MiB, the price of
// what the free-space minimum must leave room for (see memTableSize). Run it
// long enough for many memtables to be flushed:
//
//	go test -run '^$' -bench Ingest -benchtime 300000x ./internal/storage/kv/
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func BenchmarkIngest(b *testing.B) {
	pk := strings.Repeat("ab", 32)
	content := strings.Repeat("a note of some length, ", 13)
	for _, mt := range []int64{kv.MemTableSize, 64 << 20} {
		b.Run(fmt.Sprintf("memtable=%dMiB", mt>>20), func(b *testing.B) {
			db, err := kv.Settings{}.WithMemTable(mt).Open(b.TempDir(), quiet)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ev, err := events.Open(context.Background(), db, quiet)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				e := &nostr.Event{PubKey: pk, CreatedAt: nostr.Timestamp(1_700_000_000 + i), Kind: 1,
					Tags: nostr.Tags{{"t", fmt.Sprint("topic", i%50)}}, Content: fmt.Sprint(content, i), Sig: strings.Repeat("0", 128)}
				e.ID = e.GetID()
				if _, err := ev.Save(ctx, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
