package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/policies"
)

// seeded tells the runner what a seed made.
type seeded struct {
	Banned string        `json:"banned"` // hex key with an active ban
	Took   time.Duration `json:"took"`
}

// seedMain fills a data dir through the same code outpost uses: bans and
// words through the ban-list service, events through the event store.
// seedBanlist adds bans and blocked words; it returns the first banned key.
func seedBanlist(ctx context.Context, st *store.Store, log *slog.Logger, bans, words int) (first string, err error) {
	svc, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: policies.NewBanList(), Log: log,
		SecretKey: nostr.GeneratePrivateKey(), Publish: func(ctx context.Context, ev *nostr.Event) error { _, err := st.Events.Save(ctx, ev); return err }})
	if err != nil {
		return "", err
	}
	for i := range bans {
		pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
		if _, err := svc.Ban(ctx, "bench", pk, "seeded ban", nil); err != nil {
			return "", err
		}
		if i == 0 {
			first = pk
		}
	}
	for i := range words {
		if _, err := svc.AddWord(ctx, "bench", fmt.Sprintf("blockedword%04d", i)); err != nil {
			return "", err
		}
	}
	return first, nil
}

// seedEvents stores n signed kind-1 notes by 1,000 authors, one a second up to now.
func seedEvents(ctx context.Context, st *store.Store, n int) error {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = nostr.GeneratePrivateKey()
	}
	now := time.Now().Unix()
	for i := range n {
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(now - int64(n-i)), Content: note300(i)}
		if err := ev.Sign(keys[i%len(keys)]); err != nil {
			return err
		}
		if _, err := st.Events.Save(ctx, &ev); err != nil {
			return err
		}
	}
	return nil
}

func seedMain(args []string) error {
	fs := flag.NewFlagSet("seed", flag.ExitOnError)
	dir := fs.String("dir", "", "data dir to fill")
	bans := fs.Int("bans", 0, "bans to add")
	words := fs.Int("words", 0, "blocked words to add")
	events := fs.Int("events", 0, "signed kind-1 events to store")
	mints := fs.Int("mints", 0, "mints to add to the directory (on loopback ports nobody serves)")
	fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("seed: -dir is required")
	}
	start := time.Now()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	st, err := store.Open(*dir, log)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	var out seeded
	if out.Banned, err = seedBanlist(ctx, st, log, *bans, *words); err != nil {
		return err
	}
	dir2 := mintdir.New(mintdir.Config{DB: st.DB, Events: st.Events, Log: log, Settings: mintdir.Settings{AllowPrivate: true}})
	for i := range *mints {
		if _, err := dir2.Submit(ctx, fmt.Sprintf("http://127.0.0.%d:9/mint/%d", 1+i%250, i)); err != nil {
			return err
		}
	}
	if err := seedEvents(ctx, st, *events); err != nil {
		return err
	}
	out.Took = time.Since(start)
	return json.NewEncoder(os.Stdout).Encode(out)
}

// note300 is a 300-character note that differs per i and holds no blocked word.
func note300(i int) string {
	words := []string{"relay", "nostr", "mint", "ecash", "sats", "zap", "note", "bitcoin", "lightning", "cashu", "khatru", "badger"}
	r := rand.New(rand.NewPCG(uint64(i), 7))
	var b strings.Builder
	fmt.Fprintf(&b, "#%d ", i)
	for b.Len() < 300 {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:300]
}
