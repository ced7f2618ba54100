package banlist

import (
	"fmt"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/policies"
)

// TestHealthDoesNotCopyTheList: probes ask /health at any list size, so
// the figures come from counts kept as the list changes: one call costs
// the same few allocations with 20,000 bans as with one (copying the list
// for its length took 3.6 s and gigabytes at a million bans).
func TestHealthDoesNotCopyTheList(t *testing.T) {
	ctx, c, svc, _ := newService(t)
	if _, err := svc.Ban(ctx, "key:a", fmt.Sprintf("%064x", 1), "spam", nil); err != nil {
		t.Fatal(err)
	}
	bans := make([]policies.Ban, 20_000)
	exp := c.Now().Unix() + 60
	for i := range bans {
		bans[i] = policies.Ban{PubKey: fmt.Sprintf("%064x", i+1), Reason: "wave"}
		if i%2 == 1 {
			bans[i].ExpiresAt = exp
		}
	}
	svc.List().SetBans(bans)
	if h := svc.Health(ctx); h.Checks.ActiveBans != len(bans) {
		t.Fatalf("active_bans = %d, want %d", h.Checks.ActiveBans, len(bans))
	}
	allocs := testing.AllocsPerRun(20, func() { svc.Health(ctx) })
	if allocs > 20 {
		t.Errorf("Health allocates %.0f times a call with %d bans: it copies the list", allocs, len(bans))
	}
	c.Add(61 * time.Second)
	if h := svc.Health(ctx); h.Checks.ActiveBans != len(bans)/2 {
		t.Errorf("after the temporary bans lapse: active_bans = %d, want %d", h.Checks.ActiveBans, len(bans)/2)
	}
}
