package banlist

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/policies"
)

// TestReportBanCountsFromTheLifting: members' reports ban a key; once a
// moderator lifts the ban, the reports made while it held (and those
// before) are not heard again: only reports after the lifting count.
func TestReportBanCountsFromTheLifting(t *testing.T) {
	ctx, c, svc, st := newService(t)
	members := []string{fmt.Sprintf("%064x", 11), fmt.Sprintf("%064x", 12), fmt.Sprintf("%064x", 13)}
	memberPKs := make([]string, len(members))
	for i, sk := range members {
		memberPKs[i], _ = nostr.GetPublicKey(sk)
	}
	rb := &ReportBan{ReportBanSettings: ReportBanSettings{MinReporters: 2, For: time.Hour, Window: 24 * time.Hour}, Service: svc,
		Member: func(pk string) bool { return slices.Contains(memberPKs, pk) }, Protected: func(string) bool { return false }, Log: svc.log}
	report := func(i int) {
		t.Helper()
		ev := nostr.Event{Kind: KindReport, CreatedAt: nostr.Timestamp(c.Now().Unix()), Tags: nostr.Tags{{"p", pk(1), "spam"}}}
		if err := ev.Sign(members[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Events.Save(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		rb.OnReport(ctx, &ev)
	}
	banned := func() bool { _, b := svc.List().Banned(pk(1), c.Now().Unix()); return b }
	report(0)
	if banned() {
		t.Fatal("banned on one member's report")
	}
	c.Add(time.Minute)
	report(1)
	if !banned() {
		t.Fatal("not banned on two members' reports")
	}
	c.Add(time.Minute)
	report(2) // while banned: heard by the ban
	c.Add(time.Minute)
	if _, err := svc.Unban(ctx, "key:mod", pk(1)); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Minute)
	report(0)
	if banned() {
		t.Fatal("banned again on a report made while the ban held, which the moderator overruled")
	}
	c.Add(time.Minute)
	report(1)
	if !banned() {
		t.Fatal("not banned on two members' reports after the lifting")
	}
}

// A key banned by a mirrored page has no record of its own: members'
// reports leave its ban as it is, as they do a ban of a record.
func TestReportBanLeavesAPagedBan(t *testing.T) {
	ctx, c, svc, st := newService(t)
	if err := svc.putPage("follow:x", []policies.Ban{{PubKey: pk(1), Reason: "spam wave"}}, c.Now()); err != nil {
		t.Fatal(err)
	}
	members := []string{fmt.Sprintf("%064x", 11), fmt.Sprintf("%064x", 12)}
	memberPKs := make([]string, len(members))
	for i, sk := range members {
		memberPKs[i], _ = nostr.GetPublicKey(sk)
	}
	rb := &ReportBan{ReportBanSettings: ReportBanSettings{MinReporters: 2, For: time.Hour, Window: 24 * time.Hour}, Service: svc,
		Member: func(pk string) bool { return slices.Contains(memberPKs, pk) }, Protected: func(string) bool { return false }, Log: svc.log}
	for _, sk := range members {
		ev := nostr.Event{Kind: KindReport, CreatedAt: nostr.Timestamp(c.Now().Unix()), Tags: nostr.Tags{{"p", pk(1), "spam"}}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Events.Save(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		rb.OnReport(ctx, &ev)
	}
	if b, ok := svc.Status(pk(1)); !ok || b.Reason != "spam wave" || b.ExpiresAt != 0 {
		t.Fatalf("after members' reports the paged ban is %+v, %v", b, ok)
	}
}
