package banlist

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// The access lists are kept in the store and loaded into the snapshot at
// start, like bans.
func TestAccessListsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := testkit.NewClock(time.Unix(1_700_000_000, 0))
	svc, st := open(t, dir, c)
	id := strings.Repeat("0f", 32)
	steps := []error{
		second(svc.AllowPubKey(ctx, "key:a", pk(1), "member")),
		second(svc.DisallowKind(ctx, "key:a", 4)),
		second(svc.AllowKind(ctx, "key:a", 1)),
		second(svc.BlockIP(ctx, "key:a", "198.51.100.0/24", "scanner", false)),
		second(svc.BanEvent(ctx, "key:a", strings.ToUpper(id), "illegal")),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	st.Close()

	svc, st = open(t, dir, c)
	defer st.Close()
	l := svc.List()
	if !l.MayPublish(pk(1)) || l.MayPublish(pk(2)) {
		t.Error("the allow list was lost across a restart")
	}
	if l.KindAccepted(4) || !l.KindAccepted(1) || l.KindAccepted(7) {
		t.Error("the kind rules were lost across a restart")
	}
	if b, ok := l.IPBlocked("198.51.100.9"); !ok || b.Reason != "scanner" {
		t.Errorf("the address block was lost across a restart: %v %v", b, ok)
	}
	if !l.EventBanned(id) {
		t.Error("the event ban was lost across a restart (or its id kept in upper case)")
	}
}

func second[T any](_ T, err error) error { return err }

// A ban with no end takes a key off the allow list (NIP-86 banpubkey); a
// temporary one leaves it there for when the ban lapses. allowpubkey lifts
// a ban.
func TestBansAndTheAllowList(t *testing.T) {
	ctx, c, svc, _ := newService(t)
	svc.AllowPubKey(ctx, "key:a", pk(1), "")
	svc.AllowPubKey(ctx, "key:a", pk(2), "")
	exp := c.Now().Unix() + 60
	if _, err := svc.Ban(ctx, "key:a", pk(1), "a while", &exp); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Ban(ctx, "key:a", pk(2), "for good", nil); err != nil {
		t.Fatal(err)
	}
	allowed, _ := svc.AllowedPubKeys(ctx)
	if len(allowed) != 1 || allowed[0].PubKey != pk(1) {
		t.Fatalf("allowed = %+v, want only the temporarily banned key", allowed)
	}
	if _, err := svc.AllowPubKey(ctx, "key:b", pk(2), "second chance"); err != nil {
		t.Fatal(err)
	}
	if _, banned := svc.Status(pk(2)); banned {
		t.Fatal("allowpubkey did not lift the ban")
	}
	if _, err := svc.UnallowPubKey(ctx, "key:b", pk(3)); !testkit.IsKind(err, outpost.NotFound) {
		t.Fatalf("unallow of a key not on the list: %v", err)
	}
	audit, _ := svc.Audit(ctx, 0, 3)
	if audit[0].Action != "pubkey.allow" || audit[1].Action != "unban" || audit[1].Actor != "key:b" {
		t.Fatalf("allowpubkey's audit: %+v", audit)
	}
}

func TestAccessInput(t *testing.T) {
	ctx, _, svc, _ := newService(t)
	tests := []struct {
		name string
		err  error
		code string
	}{
		{"kind -1", second(svc.AllowKind(ctx, "a", -1)), "invalid_kind"},
		{"kind 65536", second(svc.DisallowKind(ctx, "a", 65536)), "invalid_kind"},
		{"clear a kind with no rule", second(svc.ClearKind(ctx, "a", 3)), "kind_not_listed"},
		{"a host name", second(svc.BlockIP(ctx, "a", "example.com", "", false)), "invalid_ip"},
		{"unblock what is not blocked", second(svc.UnblockIP(ctx, "a", "192.0.2.1")), "ip_not_blocked"},
		{"a short event id", second(svc.BanEvent(ctx, "a", "abc", "")), "invalid_event_id"},
		{"unban an event not banned", second(svc.UnbanEvent(ctx, "a", strings.Repeat("1", 64))), "event_not_banned"},
		{"a long reason", second(svc.BlockIP(ctx, "a", "192.0.2.1", strings.Repeat("r", MaxReasonLen+1), false)), "invalid_request"},
	}
	for _, tt := range tests {
		if e := outpost.AsError(tt.err); e == nil || e.Code != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, tt.err, tt.code)
		}
	}
	// Setting a kind's rule again changes nothing and writes no audit entry.
	svc.AllowKind(ctx, "a", 1)
	svc.AllowKind(ctx, "b", 1)
	if audit, _ := svc.Audit(ctx, 0, 10); len(audit) != 1 || audit[0].Actor != "a" {
		t.Fatalf("audit = %+v, want one entry", audit)
	}
	// The same network in two spellings is one block.
	svc.BlockIP(ctx, "a", "192.0.2.77/24", "", false)
	if b, err := svc.UnblockIP(ctx, "a", "192.0.2.0/24"); err != nil || b.IP != "192.0.2.0/24" {
		t.Fatalf("unblock by the network's other spelling: %+v %v", b, err)
	}
}

// A block wider than a /16 (IPv4) or /32 (IPv6) is refused without the
// confirmation: a slip such as 0.0.0.0/0 would shut everyone out.
func TestWideIPBlockNeedsConfirmation(t *testing.T) {
	ctx := context.Background()
	svc, st := open(t, t.TempDir(), testkit.NewClock(time.Unix(1_700_000_000, 0)))
	defer st.Close()
	tests := []struct {
		ip   string
		wide bool
	}{
		{"0.0.0.0/0", true},
		{"10.0.0.0/8", true},
		{"172.16.0.0/15", true},
		{"172.16.0.0/16", false},
		{"192.0.2.1", false},
		{"::/0", true},
		{"2001:db8::/31", true},
		{"2001:db8::/32", false},
		{"::ffff:10.0.0.0/104", true}, // IPv4-mapped: a /8
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if got := WideBlock(tt.ip); got != tt.wide {
				t.Fatalf("WideBlock = %v, want %v", got, tt.wide)
			}
			_, err := svc.BlockIP(ctx, "a", tt.ip, "", false)
			if e := outpost.AsError(err); tt.wide && (e == nil || e.Code != "confirmation_required") {
				t.Fatalf("unconfirmed: %v, want confirmation_required", err)
			} else if !tt.wide && err != nil {
				t.Fatalf("unconfirmed narrow block: %v", err)
			}
			if _, err := svc.BlockIP(ctx, "a", tt.ip, "", true); err != nil {
				t.Fatalf("confirmed: %v", err)
			}
		})
	}
}
