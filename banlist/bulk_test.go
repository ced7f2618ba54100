package banlist

import (
	"fmt"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/testkit"
)

func hexKey(i int) string { return fmt.Sprintf("%064x", i+1) }

// TestBanMany: a batch of the largest size is written and enforced whole,
// audited once, with every ban naming its batch; it reaches the changes
// feed; a key banned before is re-banned with its old ban lifted.
func TestBanMany(t *testing.T) {
	ctx, c, svc, _ := newService(t)
	old, err := svc.Ban(ctx, "key:a", hexKey(3), "first", nil)
	if err != nil {
		t.Fatal(err)
	}
	since := c.Now()
	c.Add(10 * time.Second)
	exp := c.Now().Unix() + 3600
	reqs := make([]BanRequest, MaxBatch)
	for i := range reqs {
		reqs[i] = BanRequest{PubKey: hexKey(i), Reason: "wave"}
		if i%3 == 0 {
			reqs[i].ExpiresAt = &exp
		}
	}
	start := time.Now()
	batch, err := svc.BanMany(ctx, "key:a", reqs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bans in %v (%.0f/s)", len(reqs), time.Since(start), float64(len(reqs))/time.Since(start).Seconds())
	if batch.Banned != len(reqs) || batch.ID == "" {
		t.Fatalf("batch %+v", batch)
	}
	if n := svc.List().ActiveBans(c.Now().Unix()); n != len(reqs) {
		t.Errorf("%d bans enforced, want %d", n, len(reqs))
	}
	audit, err := svc.Audit(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 2 || audit[0].Action != "ban.batch" || audit[0].ID != batch.ID || audit[1].Action != "ban" {
		t.Errorf("audit log: %+v", audit)
	}
	bans, err := svc.Bans(ctx, "", 0, MaxBatch+10)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bans {
		if b.ID == old.ID {
			if b.State(c.Now().Unix()) != StateLifted {
				t.Errorf("replaced ban is %s, want lifted", b.State(c.Now().Unix()))
			}
		} else if b.Batch != batch.ID {
			t.Fatalf("ban %s names batch %q, want %q", b.PubKey, b.Batch, batch.ID)
		}
	}
	if len(bans) != len(reqs)+1 {
		t.Errorf("%d ban records, want %d", len(bans), len(reqs)+1)
	}
	ch, err := svc.Changes(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Added) != len(reqs) {
		t.Errorf("changes feed has %d added, want %d", len(ch.Added), len(reqs))
	}
}

// TestBanManyRefusesWhole: one bad ban refuses the batch, naming it, and
// nothing of it is written.
func TestBanManyRefusesWhole(t *testing.T) {
	ctx, c, svc, _ := newService(t)
	past := c.Now().Unix() - 1
	for _, bad := range []BanRequest{
		{PubKey: "zz", Reason: "x"},
		{PubKey: hexKey(9), Reason: ""},
		{PubKey: hexKey(9), Reason: "x", ExpiresAt: &past},
	} {
		reqs := []BanRequest{{PubKey: hexKey(1), Reason: "ok"}, {PubKey: hexKey(2), Reason: "ok"}, bad}
		_, err := svc.BanMany(ctx, "key:a", reqs)
		if e := outpost.AsError(err); e.Kind != outpost.Invalid || e.Details["index"] != 2 {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := svc.BanMany(ctx, "key:a", nil); !testkit.IsKind(err, outpost.Invalid) {
		t.Errorf("empty batch: %v", err)
	}
	if n := svc.List().Len(); n != 0 {
		t.Errorf("%d bans enforced after refused batches", n)
	}
	if bans, _ := svc.Bans(ctx, "", 0, 10); len(bans) != 0 {
		t.Errorf("refused batches wrote %d bans", len(bans))
	}
}

// TestAddWords: a batch of words is enforced at once, audited once, reaches
// the changes feed, and leaves words blocked before as they were.
func TestAddWords(t *testing.T) {
	ctx, c, svc, _ := newService(t)
	if _, err := svc.AddWord(ctx, "key:a", "Casino"); err != nil {
		t.Fatal(err)
	}
	c.Add(10 * time.Second)
	since := c.Now()
	c.Add(10 * time.Second)
	words := make([]string, MaxWordBatch)
	for i := range words {
		words[i] = fmt.Sprintf("bulkword%d", i)
	}
	words[7] = "CASINO"
	words[8] = "bulkword9"
	batch, err := svc.AddWords(ctx, "key:a", words)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch.Added) != MaxWordBatch-2 {
		t.Errorf("%d words added, want %d", len(batch.Added), MaxWordBatch-2)
	}
	if w, ok := svc.List().BlockedWord("win at bulkword999"); !ok || w != "bulkword999" {
		t.Errorf("a batch word is not enforced: %q %v", w, ok)
	}
	if w, _ := svc.List().BlockedWord("casino"); w != "Casino" {
		t.Errorf("a word blocked before changed: %q", w)
	}
	if audit, _ := svc.Audit(ctx, 0, 5); len(audit) != 2 || audit[0].Action != "word.batch" {
		t.Errorf("audit log: %+v", audit)
	}
	ch, err := svc.Changes(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.WordsAdded) != MaxWordBatch-2 {
		t.Errorf("changes feed has %d words added, want %d", len(ch.WordsAdded), MaxWordBatch-2)
	}
	_, err = svc.AddWords(ctx, "key:a", []string{"fine", "!!!"})
	if e := outpost.AsError(err); e == nil || e.Code != "invalid_word" || e.Details["index"] != 1 {
		t.Errorf("a bad word: %v", err)
	}
	if _, ok := svc.List().BlockedWord("fine"); ok {
		t.Error("a refused batch blocked a word")
	}
}
