package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// outpost backup through the admin socket while publishers and moderators
// write: the restored data dir serves every event and ban acknowledged
// before the backup started, under the same service key, and holds the
// faucet's wallet. Then a backup of the stopped data dir, and the refusals
// of restore.
func TestBackupWhileServingAndRestore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inst := start(t, dir, map[string]string{"OUTPOST_RELAY_EVENTS_PER_MINUTE": "0", "OUTPOST_RELAY_IP_EVENTS_PER_MINUTE": "0",
		"OUTPOST_LOG_LEVEL": "info"})
	_, index := call(t, "GET", inst.url+"/", nil)
	_, words := call(t, "GET", inst.url+"/banlist/blocked/words", nil)

	// The writers: two publishers over the relay, one moderator banning
	// keys over REST. Each appends what was acknowledged, in order.
	var mu sync.Mutex
	var events []string
	var banned []string
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		r := connect(t, inst)
		sk := nostr.GeneratePrivateKey()
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				ev := note(t, sk, "written under load", 1)
				ev.CreatedAt -= nostr.Timestamp(i) // distinct ids
				ev.Sign(sk)
				if err := publish(t, r, ev); err != nil {
					t.Errorf("publish: %v", err)
					return
				}
				mu.Lock()
				events = append(events, ev.ID)
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
			if code, _ := call(t, "POST", inst.url+"/banlist/admin/ban", map[string]any{"pubkey": pk, "reason": "load"}, admin()...); code != 200 && code != 201 {
				t.Errorf("ban: %d", code)
				return
			}
			mu.Lock()
			banned = append(banned, pk)
			mu.Unlock()
		}
	})
	waitCount := func(n int) {
		testkit.WaitFor(t, 20*time.Second, "the writers to make progress", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(events) >= n && len(banned) >= n/4 || t.Failed()
		})
	}
	waitCount(40)

	mu.Lock()
	eventsBefore, bannedBefore := append([]string{}, events...), append([]string{}, banned...)
	mu.Unlock()
	file := filepath.Join(t.TempDir(), "outpost.backup")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"backup", file, "--data-dir", dir}, testEnv(dir, nil), nil, &out, io.Discard); err != nil {
		t.Fatalf("backup: %v", err)
	}
	if !strings.Contains(out.String(), "from the running outpost") {
		t.Fatalf("backup said %q; want it taken through the admin socket", out.String())
	}
	waitCount(len(eventsBefore) + 20) // the writers went on during the backup
	stop.Store(true)
	wg.Wait()
	inst.shutdown(t)
	inst.done = make(chan error, 1)
	inst.done <- nil
	if t.Failed() {
		return
	}
	if entries, _ := filepath.Glob(file + ".partial-*"); len(entries) > 0 {
		t.Fatalf("left behind: %v", entries)
	}

	// A restore refuses a non-empty data dir and leaves it alone.
	if err := run(context.Background(), []string{"restore", file, "--data-dir", dir}, testEnv(dir, nil), nil, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "not empty") {
		t.Fatalf("restore into the live data dir: %v", err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if err := run(context.Background(), []string{"restore", file, "--data-dir", restored}, testEnv(restored, nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatalf("restore: %v", err)
	}
	walletKeys := countPrefix(t, restored, kv.PrefixWallet)
	if walletKeys == 0 {
		t.Fatal("the restored database has no faucet wallet records")
	}

	inst2 := start(t, restored, nil)
	if _, idx := call(t, "GET", inst2.url+"/", nil); idx["pubkey"] != index["pubkey"] {
		t.Fatalf("restored service key %v, want %v", idx["pubkey"], index["pubkey"])
	}
	// The ban list's answers name the same service key and a new epoch: a
	// follower tells the restored node from the one backed up.
	if _, w := call(t, "GET", inst2.url+"/banlist/blocked/words", nil); w["service_pubkey"] != words["service_pubkey"] ||
		w["epoch"] == words["epoch"] || w["epoch"] == "" {
		t.Fatalf("the restored node's list answers as %v %v, the original's as %v %v", w["service_pubkey"], w["epoch"], words["service_pubkey"], words["epoch"])
	}
	r := connect(t, inst2)
	got := map[string]bool{}
	for start := 0; start < len(eventsBefore); start += 200 {
		for _, ev := range query(t, r, nostr.Filter{IDs: eventsBefore[start:min(start+200, len(eventsBefore))]}) {
			got[ev.ID] = true
		}
	}
	for i, id := range eventsBefore {
		if !got[id] {
			t.Fatalf("event %d of %d acknowledged before the backup is missing after the restore", i+1, len(eventsBefore))
		}
	}
	for i, pk := range bannedBefore {
		if _, b := call(t, "GET", inst2.url+"/banlist/blocked/pubkeys/"+pubkey.NPub(pk), nil); b["blocked"] != true {
			t.Fatalf("ban %d of %d acknowledged before the backup is missing after the restore: %v", i+1, len(bannedBefore), b)
		}
	}
	t.Logf("restored %d events and %d bans acknowledged before the backup (%d and %d by the end); %d wallet records",
		len(eventsBefore), len(bannedBefore), len(events), len(banned), walletKeys)
	inst2.shutdown(t)
	inst2.done = make(chan error, 1)
	inst2.done <- nil

	// With outpost stopped, backup reads the data dir itself.
	walletKeys = countPrefix(t, restored, kv.PrefixWallet) // the restored outpost has written since
	out.Reset()
	file2 := filepath.Join(t.TempDir(), "stopped.backup")
	if err := run(context.Background(), []string{"backup", "--data-dir", restored, file2}, testEnv(restored, nil), nil, &out, io.Discard); err != nil {
		t.Fatalf("backup of a stopped data dir: %v", err)
	}
	if !strings.Contains(out.String(), "outpost not running") {
		t.Fatalf("backup said %q", out.String())
	}
	again := filepath.Join(t.TempDir(), "again")
	if err := run(context.Background(), []string{"restore", file2, "--data-dir", again}, testEnv(again, nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, again, kv.PrefixWallet); n != walletKeys {
		t.Fatalf("second restore: %d wallet records, want %d", n, walletKeys)
	}
	// A data dir without a database is a mistyped --data-dir, not an empty backup.
	if err := run(context.Background(), []string{"backup", filepath.Join(t.TempDir(), "x"), "--data-dir", t.TempDir()}, testEnv(dir, nil), nil, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "no outpost database") {
		t.Fatalf("backup of an empty dir: %v", err)
	}
}

// countPrefix opens a data dir and counts the keys under prefix.
func countPrefix(t *testing.T, dir string, prefix byte) int {
	t.Helper()
	st, err := store.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	st.DB.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{prefix}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	return n
}
