package policies

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func TestAllowList(t *testing.T) {
	t.Parallel()
	l := NewBanList()
	policy := RejectUnlistedAuthors(l)
	publish := func(author string) bool {
		reject, _ := policy(context.Background(), &nostr.Event{PubKey: author, Kind: 1})
		return !reject
	}
	if !publish(pk(1)) {
		t.Fatal("an empty allow list refused a key")
	}
	l.AllowPubKey(pk(1))
	if !publish(pk(1)) || publish(pk(2)) {
		t.Fatal("with one key on the allow list, it and only it may publish")
	}
	reject, msg := policy(context.Background(), &nostr.Event{PubKey: pk(2)})
	if !reject || msg != "restricted: this relay only accepts events from the keys on its allow list" {
		t.Fatalf("refusal: %v %q", reject, msg)
	}
	l.UnallowPubKey(pk(1))
	if !publish(pk(2)) {
		t.Fatal("an allow list emptied again still refuses")
	}
	l.SetAllowedPubKeys([]string{pk(3)})
	if publish(pk(2)) || !publish(pk(3)) {
		t.Fatal("SetAllowedPubKeys did not replace the list")
	}
}

func TestKinds(t *testing.T) {
	t.Parallel()
	l := NewBanList()
	policy := RejectDisallowedKinds(l)
	accepted := func(kind int) bool {
		reject, _ := policy(context.Background(), &nostr.Event{Kind: kind})
		return !reject
	}
	if !accepted(1) || !accepted(4) {
		t.Fatal("no rules must accept every kind")
	}
	l.SetKinds(nil, []int{4})
	if !accepted(1) || accepted(4) {
		t.Fatal("a disallowed kind is accepted, or others are not")
	}
	if _, msg := policy(context.Background(), &nostr.Event{Kind: 4}); msg != "blocked: events of kind 4 are not accepted by this relay" {
		t.Fatalf("refusal %q", msg)
	}
	l.SetKinds([]int{1, 7}, []int{4})
	if !accepted(1) || !accepted(7) || accepted(0) || accepted(4) {
		t.Fatal("with kinds allowed, only they are accepted")
	}
}

func TestParseIPBlock(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want, err string }{
		{"203.0.113.7", "203.0.113.7", ""},
		{" 203.0.113.7 ", "203.0.113.7", ""},
		{"203.0.113.7/24", "203.0.113.0/24", ""},
		{"203.0.113.0/32", "203.0.113.0", ""},
		{"2001:db8::1", "2001:db8::1", ""},
		{"2001:DB8::/32", "2001:db8::/32", ""},
		{"::ffff:203.0.113.7", "203.0.113.7", ""},
		{"::ffff:203.0.113.0/120", "203.0.113.0/24", ""},
		{"::ffff:0.0.0.0/80", "", "wider"},
		{"0.0.0.0/0", "0.0.0.0/0", ""},
		{"fe80::1%eth0", "", "not an IP"},
		{"203.0.113.7/33", "", "not an IP"},
		{"example.com", "", "not an IP"},
		{"", "", "not an IP"},
	}
	for _, tt := range tests {
		p, err := ParseIPBlock(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: got %v %v, want an error with %q", tt.in, p, err, tt.err)
			}
			continue
		}
		if err != nil || FormatIPBlock(p) != tt.want {
			t.Errorf("%q: got %q %v, want %q", tt.in, FormatIPBlock(p), err, tt.want)
		}
	}
}

func TestIPBlocks(t *testing.T) {
	t.Parallel()
	l := NewBanList()
	changes := 0
	l.WatchIPs(func() { changes++ })
	mustPrefix := func(s string) netip.Prefix {
		p, err := ParseIPBlock(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	v0 := l.IPVersion()
	l.BlockIP(BlockedIP{Prefix: mustPrefix("198.51.100.0/24"), Reason: "scanner"})
	l.BlockIP(BlockedIP{Prefix: mustPrefix("198.51.100.7"), Reason: "this one"})
	l.BlockIP(BlockedIP{Prefix: mustPrefix("2001:db8::/32")})
	if changes != 3 || l.IPVersion() == v0 {
		t.Fatalf("%d watcher calls, version %d → %d", changes, v0, l.IPVersion())
	}
	tests := []struct {
		ip, block, reason string
	}{
		{"198.51.100.7", "198.51.100.7", "this one"}, // the narrowest block wins
		{"198.51.100.8", "198.51.100.0/24", "scanner"},
		{"::ffff:198.51.100.9", "198.51.100.0/24", "scanner"},
		{"198.51.101.1", "", ""},
		{"2001:db8:1::5", "2001:db8::/32", ""},
		{"2001:db9::5", "", ""},
		{"127.0.0.1", "", ""},
		{"not an ip", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		b, ok := l.IPBlocked(tt.ip)
		if ok != (tt.block != "") || (ok && (FormatIPBlock(b.Prefix) != tt.block || b.Reason != tt.reason)) {
			t.Errorf("%q: got %v %v, want %q %q", tt.ip, b, ok, tt.block, tt.reason)
		}
	}
	l.UnblockIP(mustPrefix("198.51.100.0/24"))
	if _, ok := l.IPBlocked("198.51.100.8"); ok {
		t.Fatal("an unblocked network is still blocked")
	}
	if _, ok := l.IPBlocked("198.51.100.7"); !ok {
		t.Fatal("unblocking a network lifted a narrower block")
	}
	l.SetBlockedIPs(nil)
	if _, ok := l.IPBlocked("198.51.100.7"); ok || changes != 5 {
		t.Fatalf("SetBlockedIPs(nil) left a block, or did not notify (%d)", changes)
	}
}
