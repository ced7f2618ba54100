package banlist

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/policies"
)

var serviceKey = nostr.GeneratePrivateKey()

// newService is a ban list on a store of its own, at a clock of the test's,
// with the context of its calls; the store closes when the test ends.
func newService(t *testing.T) (context.Context, *testkit.Clock, *Service, *store.Store) {
	t.Helper()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, t.TempDir(), c)
	t.Cleanup(func() { st.Close() })
	return context.Background(), c, svc, st
}

func open(t *testing.T, dir string, c *testkit.Clock) (*Service, *store.Store) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{
		DB: st.DB, Events: st.Events, List: policies.NewBanList(), SecretKey: serviceKey, Log: log, Now: c.Now,
		Publish: func(ctx context.Context, ev *nostr.Event) error { _, err := st.Events.Save(ctx, ev); return err },
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc, st
}

// pk is the public key of the i-th test key.
func pk(i int) string {
	p, _ := nostr.GetPublicKey(fmt.Sprintf("%064x", i+1))
	return p
}

func TestBansSurviveRestartAndLapse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, dir, c)
	exp := c.Now().Unix() + 60
	if _, err := svc.Ban(ctx, "key:a", pk(1), "spam", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Ban(ctx, "key:a", pk(2), "flood", &exp); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddWord(ctx, "key:a", "Casino"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	svc, st = open(t, dir, c)
	defer st.Close()
	if _, ok := svc.Status(pk(1)); !ok {
		t.Error("permanent ban lost across restart")
	}
	if _, ok := svc.Status(pk(2)); !ok {
		t.Error("temp ban lost across restart")
	}
	if w, ok := svc.List().BlockedWord("CASINO night"); !ok || w != "Casino" {
		t.Errorf("blocked word lost across restart: %q %v", w, ok)
	}
	c.Add(60 * time.Second)
	if _, ok := svc.Status(pk(2)); ok {
		t.Error("temp ban did not lapse at expires_at")
	}
	bans, _ := svc.Bans(ctx, StateExpired, 0, 100)
	if len(bans) != 1 || bans[0].PubKey != pk(2) {
		t.Errorf("expired bans = %+v, want the temp ban", bans)
	}
	if _, err := svc.Unban(ctx, "key:a", pk(2)); !testkit.IsKind(err, outpost.NotFound) {
		t.Errorf("unban of a lapsed ban: %v, want not found", err)
	}
}

func TestRebanReplacesAndAudits(t *testing.T) {
	ctx, c, svc, _ := newService(t)
	first, _ := svc.Ban(ctx, "key:a", pk(1), "spam", nil)
	c.Add(time.Second)
	second, err := svc.Ban(ctx, "key:b", pk(1), "worse spam", nil)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := svc.Bans(ctx, "", 0, 100)
	if len(all) != 2 || all[0].ID != second.ID || all[1].ID != first.ID {
		t.Fatalf("bans = %+v, want newest first", all)
	}
	if all[1].State(c.Now().Unix()) != StateLifted || *all[1].LiftedBy != "key:b" {
		t.Errorf("replaced ban = %+v, want lifted by key:b", all[1])
	}
	if b, _ := svc.Status(pk(1)); b.Reason != "worse spam" {
		t.Errorf("status reason = %q, want the new one", b.Reason)
	}
	lifted, err := svc.Unban(ctx, "key:c", pk(1))
	if err != nil || lifted.ID != second.ID {
		t.Fatalf("unban = %+v, %v", lifted, err)
	}
	audit, _ := svc.Audit(ctx, 0, 100)
	var actions []string
	for _, a := range audit {
		actions = append(actions, a.Actor+" "+a.Action)
	}
	want := []string{"key:c unban", "key:b ban", "key:a ban"}
	if fmt.Sprint(actions) != fmt.Sprint(want) {
		t.Errorf("audit = %v, want %v", actions, want)
	}
	if string(audit[1].Before) == "null" || string(audit[2].Before) != "null" {
		t.Errorf("audit before: replacing ban should record the old one: %s / %s", audit[1].Before, audit[2].Before)
	}
}

func TestPastExpiryIsRejectedAndWritesNothing(t *testing.T) {
	ctx, c, svc, _ := newService(t)
	past := c.Now().Unix()
	if _, err := svc.Ban(ctx, "key:a", pk(1), "spam", &past); !testkit.IsKind(err, outpost.Invalid) {
		t.Fatalf("ban expiring now: %v, want invalid", err)
	}
	if bans, _ := svc.Bans(ctx, "", 0, 10); len(bans) != 0 {
		t.Fatalf("a rejected ban was written: %+v", bans)
	}
	if audit, _ := svc.Audit(ctx, 0, 10); len(audit) != 0 {
		t.Fatalf("a rejected ban was audited: %+v", audit)
	}
}

func TestKeys(t *testing.T) {
	ctx, _, svc, _ := newService(t)
	secret, k, err := svc.CreateKey(ctx, "cli", "mod1", RoleModerator)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := svc.Authenticate(ctx, secret); err != nil || got.ID != k.ID || got.Role != RoleModerator {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	if _, _, err := svc.CreateKey(ctx, "cli", "mod1", RoleViewer); !testkit.IsKind(err, outpost.Conflict) {
		t.Errorf("duplicate name: %v, want conflict", err)
	}
	if _, _, err := svc.CreateKey(ctx, "cli", "x", Role("root")); !testkit.IsKind(err, outpost.Invalid) {
		t.Errorf("bad role: %v, want invalid", err)
	}
	if _, err := svc.RevokeKey(ctx, "cli", "mod1"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, secret); !testkit.IsKind(err, outpost.Unauthorized) {
		t.Errorf("revoked key: %v, want unauthorized", err)
	}
	if _, err := svc.RevokeKey(ctx, "cli", "mod1"); !testkit.IsKind(err, outpost.NotFound) {
		t.Errorf("revoking twice: %v, want not found", err)
	}
	keys, _ := svc.Keys(ctx)
	if len(keys) != 1 || keys[0].RevokedAt == nil {
		t.Errorf("keys = %+v", keys)
	}
}

func TestReportsRoundTrip(t *testing.T) {
	ctx, c, svc, st := newService(t)
	ev := pk(0xabc)[:64]
	r1, err := svc.SubmitReport(ctx, NewReport{ReportedPubKey: pk(7), Reason: "Spam", EventIDs: []string{ev}, Comment: "flooding"})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(time.Second)
	r2, err := svc.SubmitReport(ctx, NewReport{ReportedPubKey: pk(7), Reason: "sells fake sats"})
	if err != nil {
		t.Fatal(err)
	}
	// A user's own kind-1984 event, as the relay would store it.
	userKey := nostr.GeneratePrivateKey()
	uev := nostr.Event{Kind: 1984, CreatedAt: nostr.Timestamp(c.Now().Unix() + 1), Tags: nostr.Tags{{"p", pk(8), "impersonation"}}, Content: "fake"}
	uev.Sign(userKey)
	st.Events.Save(ctx, &uev)

	got, err := svc.Reports(ctx, 0, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("Reports = %d, %v; want 3", len(got), err)
	}
	if got[0].ID != uev.ID || got[0].Source != "nostr" || got[0].Type != "impersonation" || got[0].Reporter == "" {
		t.Errorf("user report = %+v", got[0])
	}
	if got[1].ID != r2.ID || got[1].Reason != "sells fake sats" || got[1].Type != "other" || got[1].Source != "api" || got[1].Reporter != "" {
		t.Errorf("free-text report = %+v", got[1])
	}
	if got[2].ID != r1.ID || got[2].Type != "spam" || got[2].Reason != "spam" || got[2].EventIDs[0] != ev || got[2].Comment != "flooding" {
		t.Errorf("typed report = %+v", got[2])
	}
	// Duplicates are kept.
	c.Add(time.Second)
	svc.SubmitReport(ctx, NewReport{ReportedPubKey: pk(7), Reason: "spam"})
	c.Add(time.Second)
	svc.SubmitReport(ctx, NewReport{ReportedPubKey: pk(7), Reason: "spam"})
	if got, _ := svc.Reports(ctx, 0, 10); len(got) != 5 {
		t.Errorf("duplicates dropped: %d reports, want 5", len(got))
	}
	if got, _ := svc.Reports(ctx, r2.CreatedAt, 10); len(got) != 2 {
		t.Errorf("until=%d: %d reports, want 2", r2.CreatedAt, len(got))
	}
}

func TestConcurrentBansKeepSnapshotInStep(t *testing.T) {
	ctx, _, svc, _ := newService(t)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc.Ban(ctx, "key:a", pk(1), fmt.Sprint("r", i), nil)
			if i%2 == 0 {
				svc.Unban(ctx, "key:a", pk(1))
			}
		}()
	}
	wg.Wait()
	all, _ := svc.Bans(ctx, StateActive, 0, 100)
	_, banned := svc.Status(pk(1))
	if banned != (len(all) == 1) || len(all) > 1 {
		t.Fatalf("snapshot says banned=%v, store has %d active bans", banned, len(all))
	}
	if banned {
		b, _ := svc.Status(pk(1))
		if b.Reason != all[0].Reason {
			t.Fatalf("snapshot reason %q, store reason %q", b.Reason, all[0].Reason)
		}
	}
}

// TestRestartLoadsTheCurrentBans: a restart holds exactly the bans held
// before it (read in one walk of the bans, by the ids the index of keys
// names): not a key's replaced ban, nor a lifted or lapsed one.
func TestRestartLoadsTheCurrentBans(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, dir, c)
	var reqs []BanRequest
	for i := range 300 {
		reqs = append(reqs, BanRequest{PubKey: pk(i), Reason: "wave"})
	}
	if _, err := svc.BanMany(ctx, "key:a", reqs); err != nil {
		t.Fatal(err)
	}
	soon := c.Now().Unix() + 45
	for i := range 40 {
		switch c.Add(time.Second); i % 4 {
		case 0: // replaced: the new ban holds
			_, err := svc.Ban(ctx, "key:b", pk(i), "worse", nil)
			if err != nil {
				t.Fatal(err)
			}
		case 1:
			_, err := svc.Unban(ctx, "key:b", pk(i))
			if err != nil {
				t.Fatal(err)
			}
		case 2: // replaced by a ban that lapses
			_, err := svc.Ban(ctx, "key:b", pk(i), "brief", &soon)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := svc.Ban(ctx, "key:b", pk(400), "late", nil); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Minute)
	want, _ := svc.List().Bans(c.Now().Unix())
	st.Close()

	svc, st = open(t, dir, c)
	defer st.Close()
	got, _ := svc.List().Bans(c.Now().Unix())
	if !slices.Equal(got, want) {
		t.Fatalf("after a restart %d bans, want the %d held before", len(got), len(want))
	}
	if len(want) != 300-20+1 {
		t.Fatalf("%d bans held, want %d (the test does not test)", len(want), 300-20+1)
	}
}
