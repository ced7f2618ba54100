package relay

import (
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func pageVersion(d string, at nostr.Timestamp) *version {
	return &version{address: address{kind: 30000, d: d}, id: [32]byte{d[0], byte(at)}, at: at}
}

// An address's version that waited while the stored events were read is
// not sent after them when they held a newer one (its own broadcast comes
// later), and of two waiting versions only the newer is sent.
func TestGoLiveSendsNoSupersededVersion(t *testing.T) {
	s := &sub{c: &conn{out: newOutbox(1 << 20)}, id: "s", head: eventHead("s")}
	deliver := func(v *version) { s.deliver(v.id, v, []byte(v.d+"@"+string('0'+rune(v.at)))) }
	deliver(pageVersion("a", 1)) // older than the stored version of a
	deliver(pageVersion("b", 1))
	deliver(pageVersion("b", 2)) // replaces b@1
	deliver(pageVersion("b", 1)) // older than the one waiting: dropped
	var sent sentIDs
	stored := pageVersion("a", 2)
	sent.add(stored.id)
	sent.addVersion(stored)
	s.goLive(&sent, nil)
	got, _ := s.c.out.take(nil, 1<<20)
	if want := []string{`["EOSE","s"]`, `["EVENT","s",b@2]`}; !slices.Equal(bodies(got), want) {
		t.Fatalf("sent %q, want %q", bodies(got), want)
	}
}

// A live subscription's queue holds one version of an address: a newer one
// takes the older one's place, an older one is dropped, and once written
// the next version queues anew.
func TestOutboxKeepsTheLatestVersion(t *testing.T) {
	o, s := newOutbox(1<<20), &sub{}
	push := func(v *version, body string) {
		if !o.pushLatest(text(body), s, v) {
			t.Fatal("refused")
		}
	}
	push(pageVersion("a", 1), "a1")
	o.push(text("note"))
	push(pageVersion("a", 3), "a3")
	push(pageVersion("a", 2), "a2")
	push(pageVersion("b", 1), "b1")
	got, _ := o.take(nil, 1<<20)
	if want := []string{"a3", "note", "b1"}; !slices.Equal(bodies(got), want) {
		t.Fatalf("queued %q, want %q", bodies(got), want)
	}
	if o.written(o.queued); o.queued != 0 || len(o.latests) != 0 {
		t.Fatalf("%d bytes and %d versions left", o.queued, len(o.latests))
	}
	push(pageVersion("a", 4), "a4")
	if got, _ := o.take(nil, 1<<20); !slices.Equal(bodies(got), []string{"a4"}) {
		t.Fatalf("queued %q after a write", bodies(got))
	}
}
