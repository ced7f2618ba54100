package relay

import (
	"encoding/binary"
	"encoding/csv"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr"
)

// keyCache.verify agrees with go-nostr's CheckSignature on every event whose
// id is its hash: good ones, and ones whose signature, pubkey or content was
// tampered with (the id then recomputed, so that only the signature can
// tell); and a key that shares a cache slot with another is never mistaken
// for it.
func TestVerifySignature(t *testing.T) {
	t.Parallel()
	r := &keyCache{}
	// Keys two by two in the same cache slot.
	type key struct{ sk, pk string }
	var a, b key
	slots := map[uint16]key{}
	for b.sk == "" {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		raw, _ := hex.DecodeString(pk)
		slot := binary.LittleEndian.Uint16(raw) % uint16(len(r.slots))
		if other, ok := slots[slot]; ok {
			a, b = other, key{sk, pk}
		}
		slots[slot] = key{sk, pk}
	}
	sign := func(k key, content string) nostr.Event {
		ev := nostr.Event{Kind: 1, CreatedAt: 1_700_000_000, Content: content, Tags: nostr.Tags{}}
		if err := ev.Sign(k.sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	rehash := func(ev nostr.Event) nostr.Event { ev.ID = ev.GetID(); return ev }

	evA, evB := sign(a, "a"), sign(b, "b")
	cases := map[string]nostr.Event{
		"a":                           evA,
		"b, same slot as a":           evB,
		"a again, after b took it":    evA,
		"b's pubkey on a's signature": rehash(func() nostr.Event { e := evA; e.PubKey = b.pk; return e }()),
		"a's signature on b's event":  func() nostr.Event { e := evB; e.Sig = evA.Sig; return e }(),
		"content changed":             rehash(func() nostr.Event { e := evA; e.Content = "x"; return e }()),
		"signature's last bit":        func() nostr.Event { e := evA; e.Sig = e.Sig[:127] + string("10"[e.Sig[127]&1]); return e }(),
		"signature's s over the order": func() nostr.Event {
			e := evA
			e.Sig = e.Sig[:64] + strings.Repeat("f", 64)
			return e
		}(),
		"pubkey not on the curve": rehash(func() nostr.Event { e := evA; e.PubKey = strings.Repeat("0", 63) + "5"; return e }()),
		"pubkey over the field":   rehash(func() nostr.Event { e := evA; e.PubKey = strings.Repeat("f", 64); return e }()),
		"signature not hex":       func() nostr.Event { e := evA; e.Sig = strings.Repeat("zz", 64); return e }(),
		"signature short":         func() nostr.Event { e := evA; e.Sig = e.Sig[:126]; return e }(),
	}
	for name, ev := range cases {
		if !ev.CheckID() {
			t.Fatalf("%s: the case's id is not its hash", name)
		}
		want, _ := ev.CheckSignature()
		if got := r.verify(&ev); got != want {
			t.Errorf("%s: keyCache.verify %v, go-nostr's CheckSignature %v", name, got, want)
		}
	}
	for _, name := range []string{"a", "b, same slot as a", "a again, after b took it"} {
		if ev := cases[name]; !r.verify(&ev) {
			t.Errorf("%s: a good signature refused", name)
		}
	}
}

// keyCache.verify gives BIP-340's own answer for each of its test vectors
// (bitcoin/bips, bip-0340/test-vectors.csv; all have 32-byte messages, as an
// event id is): R with an odd y, R at infinity, r and s at the field's size
// and the order, public keys off the curve or over the field.
func TestVerifySignatureBIP340Vectors(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/bip340-vectors.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 16 {
		t.Fatalf("%d rows, want a header and 15 vectors", len(rows))
	}
	r := &keyCache{}
	for _, row := range rows[1:] {
		ev := nostr.Event{PubKey: strings.ToLower(row[2]), ID: strings.ToLower(row[4]), Sig: strings.ToLower(row[5])}
		if got, want := r.verify(&ev), row[6] == "TRUE"; got != want {
			t.Errorf("vector %s (%s): keyCache.verify %v, BIP-340 says %v", row[0], row[7], got, want)
		}
	}
}

// On good signatures and on ones with a random byte of the id, pubkey or
// signature changed, keyCache.verify agrees with btcec's BIP-340 Verify.
func TestVerifySignatureAgreesWithBtcec(t *testing.T) {
	t.Parallel()
	r := &keyCache{}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = nostr.GeneratePrivateKey()
	}
	valid := 0
	for i := range 600 {
		ev := nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(1_700_000_000 + i), Content: "x", Tags: nostr.Tags{}}
		if err := ev.Sign(keys[i%len(keys)]); err != nil {
			t.Fatal(err)
		}
		raw, _ := hex.DecodeString(ev.ID + ev.PubKey + ev.Sig) // 32 + 32 + 64 bytes
		if i%3 != 0 {
			raw[rng.IntN(len(raw))] ^= byte(1 + rng.IntN(255))
		}
		ev.ID, ev.PubKey, ev.Sig = hex.EncodeToString(raw[:32]), hex.EncodeToString(raw[32:64]), hex.EncodeToString(raw[64:])
		want := false
		if pk, err := schnorr.ParsePubKey(raw[32:64]); err == nil {
			if sig, err := schnorr.ParseSignature(raw[64:]); err == nil {
				want = sig.Verify(raw[:32], pk)
			}
		}
		if want {
			valid++
		}
		if got := r.verify(&ev); got != want {
			t.Fatalf("case %d: keyCache.verify %v, btcec %v (%s %s %s)", i, got, want, ev.ID, ev.PubKey, ev.Sig)
		}
	}
	if valid != 200 {
		t.Fatalf("%d of 600 cases valid, want the 200 left unchanged", valid)
	}
}

// Many goroutines verifying the events of a few authors share the cache.
func TestVerifySignatureConcurrent(t *testing.T) {
	t.Parallel()
	r := &keyCache{}
	var events []nostr.Event
	for range 8 {
		sk := nostr.GeneratePrivateKey()
		for i := range 4 {
			ev := nostr.Event{Kind: 1, CreatedAt: 1_700_000_000, Content: strings.Repeat("x", i), Tags: nostr.Tags{}}
			ev.Sign(sk)
			events = append(events, ev)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range events {
				ev := events[(i+g)%len(events)]
				if !r.verify(&ev) {
					t.Errorf("event %d refused", i)
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkVerifySignature: the events of 100 authors, against go-nostr's
// CheckSignature on the same events.
func BenchmarkVerifySignature(b *testing.B) {
	var events []nostr.Event
	for range 100 {
		sk := nostr.GeneratePrivateKey()
		ev := nostr.Event{Kind: 1, CreatedAt: 1_700_000_000, Content: strings.Repeat("x", 300), Tags: nostr.Tags{}}
		ev.Sign(sk)
		events = append(events, ev)
	}
	b.Run("outpost", func(b *testing.B) {
		r := &keyCache{}
		for i := 0; b.Loop(); i++ {
			if !r.verify(&events[i%len(events)]) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("go-nostr", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if ok, _ := events[i%len(events)].CheckSignature(); !ok {
				b.Fatal("refused")
			}
		}
	})
}
