package store_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
)

func reopen(t *testing.T, dir string, prev *store.Store) *store.Store {
	t.Helper()
	if prev != nil {
		if err := prev.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A token is used once across restarts: its record outlives the process
// until its window has passed.
func TestReplaysSurviveReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := reopen(t, dir, nil)
	now := time.Now()
	use := func(st *store.Store, id string, at time.Time, want bool) {
		t.Helper()
		got, err := store.NewReplays(st.DB).Use(id, at, at.Add(2*time.Second))
		if err != nil || got != want {
			t.Fatalf("Use(%s) at +%v = %v %v, want %v", id, at.Sub(now), got, err, want)
		}
	}
	use(st, "a", now, true)
	use(st, "a", now, false)
	st = reopen(t, dir, st)
	defer func() { st.Close() }()
	use(st, "a", now.Add(time.Second), false)
	use(st, "b", now, true)
	// Past its window a record is gone: for the caller's clock at once,
	// for badger's TTL (which sweeps it) on the wall clock.
	use(st, "a", now.Add(3*time.Second), true)
	if n := countReplays(t, st); n != 2 {
		t.Fatalf("%d records within the windows, want 2", n)
	}
	testkit.Past(now.Add(3500 * time.Millisecond))
	st = reopen(t, dir, st)
	if n := countReplays(t, st); n != 0 {
		t.Fatalf("%d records after the windows, want none", n)
	}
}

func countReplays(t *testing.T, st *store.Store) int {
	n := 0
	st.DB.View(func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IteratorOptions{Prefix: []byte{kv.PrefixReplay}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	return n
}

// A NIP-98 token verified once is refused as a replay by a verifier of the
// reopened store, within its window.
func TestNIP98ReplayAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := reopen(t, dir, nil)
	const u = "http://outpost.test/faucet/auth/login"
	header, err := nip98.Sign(nostr.GeneratePrivateKey(), http.MethodPost, u, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	verify := func(st *store.Store) error {
		v := nip98.NewVerifier(0, nil, store.NewReplays(st.DB))
		_, err := v.Verify(header, nip98.Request{Method: http.MethodPost, URLs: []string{u}})
		return err
	}
	if err := verify(st); err != nil {
		t.Fatal(err)
	}
	st = reopen(t, dir, st)
	defer func() { st.Close() }()
	err = verify(st)
	if e := outpost.AsError(err); e == nil || e.Details["check"] != "replay" {
		t.Fatalf("the token again after a restart: %v, want a replay", err)
	}
}
