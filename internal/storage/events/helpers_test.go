package events

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testDB opens a small database in memory, or in dir when it is set.
func testDB(t testing.TB, dir string) *kv.DB {
	t.Helper()
	var db *kv.DB
	var err error
	if dir == "" {
		db, err = kv.OpenInMemory()
	} else {
		db, err = kv.Settings{}.Open(dir, quiet())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// testStore is a store in memory whose clock is at now. Its event cache is
// the smallest there is, so that the tests read through it, evicting too.
func testStore(t testing.TB, now time.Time) *Store {
	t.Helper()
	s, err := Open(context.Background(), testDB(t, ""), quiet())
	if err != nil {
		t.Fatal(err)
	}
	s.Cache(1 << 20)
	s.now = func() time.Time { return now }
	return s
}

// mkEvent makes an event with a correct id for pubkey, without signing it
// (the store checks ids, not signatures).
func mkEvent(pubkey string, kind int, at nostr.Timestamp, content string, tags ...nostr.Tag) *nostr.Event {
	if tags == nil {
		tags = nostr.Tags{}
	}
	ev := &nostr.Event{PubKey: pubkey, Kind: kind, CreatedAt: at, Content: content, Tags: tags}
	ev.ID = ev.GetID()
	return ev
}

func mustSave(t testing.TB, s *Store, ev *nostr.Event) Outcome {
	t.Helper()
	out, err := s.Save(context.Background(), ev)
	if err != nil {
		t.Fatalf("save %v: %v", ev, err)
	}
	return out
}

// queryIDs runs Query and returns the ids in the order yielded, checking
// that each event's Meta describes the event its JSON is.
func queryIDs(t testing.TB, s *Store, f nostr.Filter) []string {
	t.Helper()
	var ids []string
	err := s.Query(context.Background(), f, nil, func(m Meta, raw []byte) bool {
		var ev nostr.Event
		if err := ev.UnmarshalJSON(raw); err != nil {
			t.Fatalf("stored JSON %s: %v", raw, err)
		}
		if m.IDHex() != ev.ID || m.PubKeyHex() != ev.PubKey || m.Kind != ev.Kind || m.CreatedAt != ev.CreatedAt || m.Expiration != expiration(ev.Tags) {
			t.Fatalf("meta %+v of event %s", m, raw)
		}
		ids = append(ids, ev.ID)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

var testPubs = func() []string {
	out := make([]string, 4)
	for i := range out {
		out[i], _ = nostr.GetPublicKey(nostr.GeneratePrivateKey())
	}
	return out
}()
