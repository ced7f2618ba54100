package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/ops/settings"
	"github.com/outpost-relay/outpost/internal/storage/diskspace"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// On a 128 MiB filesystem (64 MiB of it badger's two memtable logs,
// allocated at Open: see memLogs), events and records are written until the free
// space reaches the minimum: then both are refused (the event with a NIP-01
// "error:" reason), nothing crashes (before the gate, badger died of SIGBUS
// writing its memtable), reads go on, health says why, and writes resume
// once space is freed. The database closes (flushing its memtable) and
// opens again; a start with too little space is refused in words.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	disk := testkit.NewFullDisk(t)
	dir, min := disk.Dir, disk.Min
	filler := filepath.Join(dir, "filler") // leaves 40 MiB once badger's logs are allocated
	if err := os.WriteFile(filler, make([]byte, 24<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	s, err := OpenWith(context.Background(), kv.Settings{MinFreeSpace: min}, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sk := nostr.GeneratePrivateKey()
	event := func(i int) *nostr.Event {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: strings.Repeat("x", 2000) + fmt.Sprint(i), Tags: nostr.Tags{{"t", "fill"}}}
		ev.Sign(sk)
		return ev
	}
	record := func(i int) error {
		return s.DB.Update(func(txn *kv.Txn) error {
			return txn.Set(kv.Key(kv.PrefixBanlist, 0xEE, kv.U64(uint64(i))), make([]byte, 1000))
		})
	}

	first := event(0)
	if _, err := s.Events.Save(ctx, first); err != nil {
		t.Fatal(err)
	}
	var evErr, recErr error
	written := 0
	for i := 1; evErr == nil || recErr == nil; i++ {
		if i > 20000 { // 80 MB: more than the filesystem holds
			t.Fatal("writes were never refused")
		}
		if evErr == nil {
			_, evErr = s.Events.Save(ctx, event(i))
		}
		if recErr == nil {
			recErr = record(i)
		}
		written = i
	}
	t.Logf("refused after %d events and records; %v free", written, settings.Bytes(*s.Health(context.Background()).Checks.FreeBytes))
	if !errors.Is(evErr, kv.ErrStorageFull) || !strings.HasPrefix(evErr.Error(), "error: ") {
		t.Errorf("event refused with %q, want kv.ErrStorageFull with a NIP-01 error: reason", evErr)
	}
	if e := outpost.AsError(recErr); e == nil || e.Kind != outpost.StorageFull || e.Code != "insufficient_storage" {
		t.Errorf("record refused with %v, want kv.ErrStorageFull", recErr)
	}
	// What records something already done goes ahead all the same.
	if err := s.DB.Record(func(txn *kv.Txn) error {
		return txn.Set(kv.Key(kv.PrefixBanlist, 0xEF), []byte("a payment made"))
	}); err != nil {
		t.Errorf("Record on a low disk: %v", err)
	}
	if free, _ := diskspace.Free(dir); free < int64(min)/2 {
		t.Errorf("only %v left when writes stopped, want most of the %v kept free", settings.Bytes(free), settings.Bytes(min))
	}
	if got := queryIDs(t, s, nostr.Filter{IDs: []string{first.ID}}); len(got) != 1 {
		t.Errorf("the first event cannot be read back: %v", got)
	}
	if err := s.DB.View(func(txn *kv.Txn) error { _, err := txn.Get(kv.Key(kv.PrefixBanlist, 0xEE, kv.U64(1))); return err }); err != nil {
		t.Errorf("a record cannot be read back: %v", err)
	}
	h := s.Health(ctx)
	if h.Status != outpost.HealthDegraded || h.Checks.Writable || !strings.Contains(h.Reason, "OUTPOST_MIN_FREE_SPACE") {
		t.Errorf("health %+v, want degraded, not writable, with the reason", h)
	}
	if n := strings.Count(logs.String(), "disk space low"); n != 1 {
		t.Errorf("low space logged %d times, want once:\n%s", n, logs)
	}

	os.Remove(filler)
	testkit.WaitFor(t, 10*time.Second, "writes to resume after space was freed", func() bool { return record(1_000_000) == nil })
	if _, err := s.Events.Save(ctx, event(-1)); err != nil {
		t.Errorf("an event after space was freed: %v", err)
	}
	if h := s.Health(ctx); h.Status != outpost.HealthOK || !h.Checks.Writable || h.Reason != "" {
		t.Errorf("health after recovery %+v", h)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close (flushing the memtable) near a full disk: %v", err)
	}

	// Reopening with enough space keeps everything; with too little, Open refuses.
	s, err = OpenWith(context.Background(), kv.Settings{MinFreeSpace: min}, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if got := queryIDs(t, s, nostr.Filter{IDs: []string{first.ID}}); len(got) != 1 {
		t.Errorf("the first event is gone after reopening: %v", got)
	}
	s.Close()
	free, _ := diskspace.Free(dir)
	if err := os.WriteFile(filler, make([]byte, free-int64(min)+1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenWith(context.Background(), kv.Settings{MinFreeSpace: min}, dir, log)
	if !errors.Is(err, kv.ErrStorageFull) || !strings.Contains(err.Error(), "OUTPOST_MIN_FREE_SPACE") || !strings.Contains(err.Error(), "free some space") {
		t.Errorf("open with too little space: %v", err)
	}
}

func queryIDs(t *testing.T, s *Store, f nostr.Filter) []string {
	t.Helper()
	var ids []string
	for ev, err := range s.Events.Find(context.Background(), f) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	return ids
}
