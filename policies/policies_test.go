package policies

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func TestPolicies(t *testing.T) {
	t.Parallel()
	l := NewBanList()
	now := time.Now().Unix()
	banned, lapsed, future, other := pk(1), pk(2), pk(3), pk(4)
	l.Ban(Ban{PubKey: banned, Reason: "spam"})
	l.Ban(Ban{PubKey: lapsed, Reason: "old", ExpiresAt: now - 1})
	l.Ban(Ban{PubKey: future, ExpiresAt: now + 3600})
	l.SetWords([]string{"viagra", "buy now"})

	tests := []struct {
		name    string
		ev      nostr.Event
		reject  bool
		wantMsg string
	}{
		{"banned author", nostr.Event{PubKey: banned, Kind: 1, Content: "hi"}, true, "blocked: you are banned from this relay: spam"},
		{"lapsed temp ban", nostr.Event{PubKey: lapsed, Kind: 1, Content: "hi"}, false, ""},
		{"active temp ban, no reason", nostr.Event{PubKey: future, Kind: 1, Content: "hi"}, true, "blocked: you are banned from this relay"},
		{"clean note", nostr.Event{PubKey: other, Kind: 1, Content: "hello world"}, false, ""},
		{"blocked word", nostr.Event{PubKey: other, Kind: 1, Content: "cheap VIAGRA here"}, true, `blocked: contains the blocked word "viagra"`},
		{"blocked phrase", nostr.Event{PubKey: other, Kind: 1, Content: "Buy   now!"}, true, `blocked: contains the blocked word "buy now"`},
		{"word inside word", nostr.Event{PubKey: other, Kind: 1, Content: "viagrass"}, false, ""},
		{"profile field", nostr.Event{PubKey: other, Kind: 0, Content: `{"name":"x","about":"Viagra dealer"}`}, true, `blocked: contains the blocked word "viagra"`},
		{"profile escaped", nostr.Event{PubKey: other, Kind: 0, Content: `{"about":"vi\u0061gra"}`}, true, `blocked: contains the blocked word "viagra"`},
		{"profile clean", nostr.Event{PubKey: other, Kind: 0, Content: `{"name":"alice"}`}, false, ""},
		{"profile not json", nostr.Event{PubKey: other, Kind: 0, Content: `viagra`}, true, `blocked: contains the blocked word "viagra"`},
		{"subject tag", nostr.Event{PubKey: other, Kind: 1, Content: "hi", Tags: nostr.Tags{{"subject", "Cheap Viagra"}}}, true, `blocked: contains the blocked word "viagra"`},
		{"title tag", nostr.Event{PubKey: other, Kind: 30023, Content: "hi", Tags: nostr.Tags{{"d", "x"}, {"title", "BUY NOW"}}}, true, `blocked: contains the blocked word "buy now"`},
		{"summary tag", nostr.Event{PubKey: other, Kind: 30023, Content: "hi", Tags: nostr.Tags{{"summary", "viagra."}}}, true, `blocked: contains the blocked word "viagra"`},
		{"alt tag", nostr.Event{PubKey: other, Kind: 1063, Tags: nostr.Tags{{"alt", "a viagra ad"}}}, true, `blocked: contains the blocked word "viagra"`},
		{"name tag", nostr.Event{PubKey: other, Kind: 30000, Tags: nostr.Tags{{"name", "viagra"}}}, true, `blocked: contains the blocked word "viagra"`},
		{"description tag", nostr.Event{PubKey: other, Kind: 34550, Tags: nostr.Tags{{"description", "viagra"}}}, true, `blocked: contains the blocked word "viagra"`},
		{"profile and a tag", nostr.Event{PubKey: other, Kind: 0, Content: `{"name":"alice"}`, Tags: nostr.Tags{{"alt", "viagra"}}}, true, `blocked: contains the blocked word "viagra"`},
		{"other tags unchecked", nostr.Event{PubKey: other, Kind: 1, Content: "hi", Tags: nostr.Tags{{"t", "viagra"}, {"r", "https://viagra.example"}}}, false, ""},
		{"phrase across content and tag", nostr.Event{PubKey: other, Kind: 1, Content: "buy", Tags: nostr.Tags{{"subject", "now"}}}, false, ""},
		{"phrase across two tags", nostr.Event{PubKey: other, Kind: 1, Tags: nostr.Tags{{"title", "buy"}, {"summary", "now"}}}, false, ""},
	}
	authors, words := RejectBannedAuthors(l), RejectBlockedWords(l)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reject, msg := authors(context.Background(), &tt.ev)
			if !reject {
				reject, msg = words(context.Background(), &tt.ev)
			}
			if reject != tt.reject || msg != tt.wantMsg {
				t.Errorf("got (%v, %q), want (%v, %q)", reject, msg, tt.reject, tt.wantMsg)
			}
		})
	}
}

func TestBanListChanges(t *testing.T) {
	t.Parallel()
	l := NewBanList()
	now := time.Now().Unix()
	v0 := l.Version()
	l.Ban(Ban{PubKey: pk(1), Reason: "a", ExpiresAt: now + 10})
	l.Ban(Ban{PubKey: pk(2), Reason: "b"})
	l.Ban(Ban{PubKey: pk(3), Reason: "c", ExpiresAt: now + 5})
	if l.Version() == v0 {
		t.Fatal("version did not change")
	}
	bans, next := l.Bans(now)
	if len(bans) != 3 || next != now+5 {
		t.Fatalf("Bans = %d bans, next expiry %d; want 3, %d", len(bans), next, now+5)
	}
	if bans, _ := l.Bans(now + 6); len(bans) != 2 {
		t.Fatalf("after the first expiry: %d bans, want 2", len(bans))
	}
	if _, ok := l.Banned(pk(3), now+5); ok {
		t.Fatal("a ban must lapse exactly at expires_at")
	}
	l.Unban(pk(2))
	if _, ok := l.Banned(pk(2), now); ok {
		t.Fatal("unbanned key still banned")
	}
	l.SetBans([]Ban{{PubKey: pk(9)}})
	if _, ok := l.Banned(pk(1), now); ok || l.Len() != 1 {
		t.Fatal("SetBans did not replace")
	}
	if got := l.Words(); len(got) != 0 {
		t.Fatalf("Words() = %q, want empty", got)
	}
}

func pk(i int) string { return fmt.Sprintf("%064x", i) }

func raw(t *testing.T, h string) [32]byte {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 32 {
		t.Fatalf("%q is not 32 bytes of hex", h)
	}
	return [32]byte(b)
}

// The ban list holds keys raw: what is banned by hex is hidden by its 32
// bytes (Hides, the read path), listed back as the same hex, and found
// however its hex is spelled; what is not a key bans nothing.
func TestBanListKeysRawAndHex(t *testing.T) {
	t.Parallel()
	l := NewBanList()
	now := time.Now().Unix()
	author := "f7234bd4c1394dda46d09f35bd384dd30cc552ad5541990f98844fb06676e9ca"
	other := "a7234bd4c1394dda46d09f35bd384dd30cc552ad5541990f98844fb06676e9ca"
	event := "5c83da77af1dec6d7289834998ad7aafbd9e2191396d75ec3cc27f5a77226f36"
	l.Ban(Ban{PubKey: author, Reason: "spam", ExpiresAt: now + 10})
	l.BanEvent(event)

	if !l.Hides(raw(t, other), raw(t, author), now) {
		t.Fatal("an event by a banned author is not hidden")
	}
	if !l.Hides(raw(t, event), raw(t, other), now) {
		t.Fatal("a banned event is not hidden")
	}
	if l.Hides(raw(t, other), raw(t, other), now) {
		t.Fatal("an event by someone else is hidden")
	}
	if l.Hides(raw(t, author), raw(t, event), now) {
		t.Fatal("id and pubkey are mixed up: an event whose id is a banned key is hidden")
	}
	if l.Hides(raw(t, other), raw(t, author), now+10) {
		t.Fatal("an event by an author whose ban lapsed is hidden")
	}
	if b, ok := l.Banned(strings.ToUpper(author), now); !ok || b.Reason != "spam" {
		t.Fatal("a ban is not found by its uppercase hex")
	}
	if !l.EventBanned(strings.ToUpper(event)) {
		t.Fatal("a banned event is not found by its uppercase hex")
	}
	if bans, _ := l.Bans(now); len(bans) != 1 || bans[0].PubKey != author {
		t.Fatalf("Bans = %+v, want the ban of %s", bans, author)
	}
	if lapsed := l.Lapsed(now, now+10); len(lapsed) != 1 || lapsed[0].PubKey != author {
		t.Fatalf("Lapsed = %+v, want the ban of %s", lapsed, author)
	}

	for _, notKey := range []string{"", "alice", author[:63], author + "0", strings.Repeat("zz", 32)} {
		l.Ban(Ban{PubKey: notKey})
		l.BanEvent(notKey)
		if _, ok := l.Banned(notKey, now); ok || l.EventBanned(notKey) {
			t.Fatalf("%q is banned", notKey)
		}
	}
	if l.Len() != 1 {
		t.Fatalf("%d bans held, want 1: something that is not a key was kept", l.Len())
	}
	l.SetBannedEvents([]string{"nope", strings.ToUpper(author)})
	if l.Hides(raw(t, event), raw(t, other), now) || !l.Hides(raw(t, author), raw(t, other), now) {
		t.Fatal("SetBannedEvents did not replace the banned events by their raw ids")
	}
	l.Unban(strings.ToUpper(author))
	if l.Hides(raw(t, other), raw(t, author), now) {
		t.Fatal("Unban by uppercase hex left the ban")
	}
}

// benchSetup builds the scenario of the benchmark target: 100,000 bans, 1,000
// blocked words and 300-character notes.
func benchSetup(b *testing.B) (*BanList, []string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	l := NewBanList()
	bans := make([]Ban, 100_000)
	keys := make([]string, len(bans))
	for i := range bans {
		var k [32]byte
		for j := range k {
			k[j] = byte(rng.UintN(256))
		}
		keys[i] = hex.EncodeToString(k[:])
		bans[i] = Ban{PubKey: keys[i], Reason: "spam"}
	}
	l.SetBans(bans)
	words := make([]string, 1000)
	for i := range words {
		words[i] = fmt.Sprintf("blockedword%03d", i)
	}
	l.SetWords(words)
	return l, keys
}

const note300 = "Just set up my new relay and the first thing I noticed is how fast it accepts notes. " +
	"Has anyone else tried running khatru with badger? I would love to compare numbers, especially " +
	"for ingest with a policy loaded. Also: the mint directory now shows the uptime for every single Cashu mint, neat!!"

func BenchmarkPolicy(b *testing.B) {
	l, keys := benchSetup(b)
	authors, words := RejectBannedAuthors(l), RejectBlockedWords(l)
	check := func(ev *nostr.Event) bool {
		if r, _ := authors(context.Background(), ev); r {
			return true
		}
		r, _ := words(context.Background(), ev)
		return r
	}
	if len(note300) < 290 || len(note300) > 310 {
		b.Fatalf("note is %d chars", len(note300))
	}
	b.Run("banned-author", func(b *testing.B) {
		ev := &nostr.Event{PubKey: keys[777], Kind: 1, Content: note300}
		b.ReportAllocs()
		for b.Loop() {
			if !check(ev) {
				b.Fatal("not rejected")
			}
		}
	})
	b.Run("clean-ascii-note", func(b *testing.B) {
		ev := &nostr.Event{PubKey: pk(1), Kind: 1, Content: note300}
		b.ReportAllocs()
		for b.Loop() {
			if check(ev) {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("clean-unicode-note", func(b *testing.B) {
		ev := &nostr.Event{PubKey: pk(1), Kind: 1, Content: strings.Replace(note300, "neat", "très bien ✨", 1)}
		b.ReportAllocs()
		for b.Loop() {
			if check(ev) {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("clean-emoji-note", func(b *testing.B) {
		ev := &nostr.Event{PubKey: pk(1), Kind: 1, Content: strings.Replace(note300, "neat!!", "neat ☕🚀", 1)}
		b.ReportAllocs()
		for b.Loop() {
			if check(ev) {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("blocked-word-note", func(b *testing.B) {
		ev := &nostr.Event{PubKey: pk(1), Kind: 1, Content: note300 + " blockedword500"}
		b.ReportAllocs()
		for b.Loop() {
			if !check(ev) {
				b.Fatal("not rejected")
			}
		}
	})
}

// BenchmarkVerifySignature is the baseline of the policy benchmark: what
// checking a 300-character note's signature costs, which a relay does for
// every event anyway.
func BenchmarkVerifySignature(b *testing.B) {
	ev := nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: note300}
	ev.Sign(nostr.GeneratePrivateKey())
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := ev.CheckSignature(); !ok {
			b.Fatal("bad signature")
		}
	}
}
