package banlistapi_test

import (
	"strings"
	"testing"

	"github.com/outpost-relay/outpost/internal/testkit/apitest"
)

// accessLists walks the moderation lists NIP-86 also manages (the allow
// list, kind rules, blocked addresses, event moderation): each change is
// in the relay's snapshot when the answer arrives, and audited.
func accessLists(t *testing.T, e *env, modKey, viewerKey string) {
	api := e.api
	list := e.svc.List()
	_, hex, npub := newKey()
	_, otherHex, _ := newKey()
	entry := func(r map[string]any, key string) map[string]any { return r[key].(map[string]any) }

	t.Run("allow list", func(t *testing.T) {
		body := map[string]any{"pubkey": npub, "reason": " member "}
		wantStatus(t, api.Do("POST", "/admin/allow-pubkey", body), 401, "unauthorized")
		wantStatus(t, api.Do("POST", "/admin/allow-pubkey", body, bearer(viewerKey)...), 403, "forbidden")
		if !list.MayPublish(otherHex) {
			t.Fatal("an empty allow list must let everyone publish")
		}
		r := mapOf(t, api.Do("POST", "/admin/allow-pubkey", body, bearer(modKey)...), 200)
		a := entry(r, "entry")
		if r["status"] != "allowed" || a["pubkey"] != npub || a["pubkey_hex"] != hex || a["reason"] != "member" || a["added_by"] != "key:mod" {
			t.Fatalf("allow = %v", r)
		}
		if !list.MayPublish(hex) || list.MayPublish(otherHex) {
			t.Fatal("the relay's snapshot did not get the allow list")
		}
		r = mapOf(t, api.Do("GET", "/admin/allowed-pubkeys", nil, bearer(viewerKey)...), 200)
		if keys := r["pubkeys"].([]any); len(keys) != 1 || keys[0].(map[string]any)["pubkey_hex"] != hex {
			t.Fatalf("allowed pubkeys = %v", r)
		}
		r = mapOf(t, api.Do("POST", "/admin/unallow-pubkey", map[string]any{"pubkey": hex}, bearer(modKey)...), 200)
		if r["status"] != "unallowed" || entry(r, "entry")["pubkey"] != npub {
			t.Fatalf("unallow = %v", r)
		}
		if !list.MayPublish(otherHex) {
			t.Fatal("the emptied allow list still keeps others from publishing")
		}
		wantStatus(t, api.Do("POST", "/admin/unallow-pubkey", map[string]any{"pubkey": npub}, bearer(modKey)...), 404, "pubkey_not_allowed")
		if n := len(mapOf(t, api.Do("GET", "/admin/allowed-pubkeys", nil, bearer(viewerKey)...), 200)["pubkeys"].([]any)); n != 0 {
			t.Fatalf("%d allowed pubkeys after unallow, want 0", n)
		}
	})

	t.Run("kinds", func(t *testing.T) {
		wantStatus(t, api.Do("POST", "/admin/allow-kind", map[string]any{"kind": 1}, bearer(viewerKey)...), 403, "forbidden")
		r := mapOf(t, api.Do("POST", "/admin/allow-kind", map[string]any{"kind": 1}, bearer(modKey)...), 200)
		if k := entry(r, "kind"); r["status"] != "allowed" || k["kind"] != float64(1) || k["rule"] != "allowed" || k["set_by"] != "key:mod" {
			t.Fatalf("allow-kind = %v", r)
		}
		mapOf(t, api.Do("POST", "/admin/disallow-kind", map[string]any{"kind": 7}, bearer(modKey)...), 200)
		if !list.KindAccepted(1) || list.KindAccepted(7) || list.KindAccepted(30023) {
			t.Fatal("the relay's snapshot did not get the kind rules")
		}
		r = mapOf(t, api.Do("GET", "/admin/kinds", nil, bearer(viewerKey)...), 200)
		if rules := r["kinds"].([]any); len(rules) != 2 || rules[1].(map[string]any)["rule"] != "disallowed" {
			t.Fatalf("kinds = %v", r)
		}
		r = mapOf(t, api.Do("POST", "/admin/disallow-kind", map[string]any{"kind": 1}, bearer(modKey)...), 200)
		if entry(r, "kind")["rule"] != "disallowed" || list.KindAccepted(1) || !list.KindAccepted(30023) {
			t.Fatalf("disallowing an allowed kind: %v", r)
		}
		for _, k := range []int{1, 7} {
			r = mapOf(t, api.Do("POST", "/admin/clear-kind", map[string]any{"kind": k}, bearer(modKey)...), 200)
			if r["status"] != "cleared" {
				t.Fatalf("clear-kind = %v", r)
			}
		}
		if !list.KindAccepted(1) || !list.KindAccepted(7) {
			t.Fatal("cleared kinds are still refused")
		}
		wantStatus(t, api.Do("POST", "/admin/clear-kind", map[string]any{"kind": 7}, bearer(modKey)...), 404, "kind_not_listed")
	})

	t.Run("blocked addresses", func(t *testing.T) {
		wantStatus(t, api.Do("POST", "/admin/block-ip", map[string]any{"ip": "203.0.113.0/24"}, bearer(viewerKey)...), 403, "forbidden")
		r := mapOf(t, api.Do("POST", "/admin/block-ip", map[string]any{"ip": "203.0.113.77/24", "reason": "scanner"}, bearer(modKey)...), 200)
		if b := entry(r, "ip"); r["status"] != "blocked" || b["ip"] != "203.0.113.0/24" || b["reason"] != "scanner" || b["blocked_by"] != "key:mod" {
			t.Fatalf("block-ip = %v", r)
		}
		if b, ok := list.IPBlocked("203.0.113.200"); !ok || b.Reason != "scanner" {
			t.Fatal("the snapshot does not block an address of the network")
		}
		mapOf(t, api.Do("POST", "/admin/block-ip", map[string]any{"ip": "2001:db8::1"}, bearer(modKey)...), 200)
		r = mapOf(t, api.Do("GET", "/admin/blocked-ips", nil, bearer(viewerKey)...), 200)
		if ips := r["ips"].([]any); len(ips) != 2 || ips[0].(map[string]any)["ip"] != "2001:db8::1" {
			t.Fatalf("blocked ips = %v", r)
		}
		// Unblocking names the network as blocked, in any spelling of it.
		r = mapOf(t, api.Do("POST", "/admin/unblock-ip", map[string]any{"ip": "203.0.113.1/24"}, bearer(modKey)...), 200)
		if r["status"] != "unblocked" || entry(r, "ip")["ip"] != "203.0.113.0/24" {
			t.Fatalf("unblock-ip = %v", r)
		}
		if _, ok := list.IPBlocked("203.0.113.200"); ok {
			t.Fatal("the snapshot still blocks an unblocked network")
		}
		wantStatus(t, api.Do("POST", "/admin/unblock-ip", map[string]any{"ip": "203.0.113.0/24"}, bearer(modKey)...), 404, "ip_not_blocked")
		wantStatus(t, api.Do("POST", "/admin/unblock-ip", map[string]any{"ip": "2001:db8::/64"}, bearer(modKey)...), 404, "ip_not_blocked")
		mapOf(t, api.Do("POST", "/admin/unblock-ip", map[string]any{"ip": "2001:DB8::1"}, bearer(modKey)...), 200)

		// Wider than a /16 (IPv4) or /32 (IPv6): admins only, confirmed.
		wantStatus(t, api.Do("POST", "/admin/block-ip", map[string]any{"ip": "0.0.0.0/0", "confirm_wide": true}, bearer(modKey)...), 403, "forbidden")
		wantStatus(t, api.Do("POST", "/admin/block-ip", map[string]any{"ip": "2001:db8::/31", "confirm_wide": true}, bearer(modKey)...), 403, "forbidden")
		wantStatus(t, api.Do("POST", "/admin/block-ip", map[string]any{"ip": "10.0.0.0/8"}, bearer(adminKey)...), 400, "confirmation_required")
		mapOf(t, api.Do("POST", "/admin/block-ip", map[string]any{"ip": "10.0.0.0/8", "confirm_wide": true}, bearer(adminKey)...), 200)
		mapOf(t, api.Do("POST", "/admin/unblock-ip", map[string]any{"ip": "10.0.0.0/8"}, bearer(modKey)...), 200)

		// A block of the caller's own network applies to its next request,
		// this one's included; a moderator's key meets it, an admin's key
		// still lists and lifts blocks.
		mapOf(t, api.Do("POST", "/admin/block-ip", map[string]any{"ip": "127.0.0.0/16", "reason": "self"}, bearer(modKey)...), 200)
		wantStatus(t, api.Do("GET", "/blocked/words", nil), 403, "ip_blocked")
		wantStatus(t, api.Do("POST", "/admin/unblock-ip", map[string]any{"ip": "127.0.0.0/16"}, bearer(modKey)...), 403, "ip_blocked")
		wantStatus(t, api.Do("GET", "/admin/bans", nil, bearer(adminKey)...), 403, "ip_blocked")
		mapOf(t, api.Do("GET", "/admin/blocked-ips", nil, bearer(adminKey)...), 200)
		mapOf(t, api.Do("POST", "/admin/unblock-ip", map[string]any{"ip": "127.0.0.0/16"}, bearer(adminKey)...), 200)
		wantStatus(t, api.Do("GET", "/blocked/words", nil), 200, "")
	})

	t.Run("events", func(t *testing.T) {
		id := strings.Repeat("5e", 32)
		_, reported, _ := newKey()
		wantStatus(t, api.Do("POST", "/reports", map[string]any{"reported_pubkey": reported, "reason": "illegal", "event_ids": []string{id}}), 201, "")
		queued := func() map[string]any {
			for _, ev := range mapOf(t, api.Do("GET", "/admin/reported-events", nil, bearer(viewerKey)...), 200)["events"].([]any) {
				if ev := ev.(map[string]any); ev["id"] == id {
					return ev
				}
			}
			return nil
		}
		if q := queued(); q == nil || q["reports"] != float64(1) || q["reasons"].([]any)[0] != "illegal" {
			t.Fatalf("the reported event is not queued: %v", q)
		}

		wantStatus(t, api.Do("POST", "/admin/ban-event", map[string]any{"event_id": id}, bearer(viewerKey)...), 403, "forbidden")
		r := mapOf(t, api.Do("POST", "/admin/ban-event", map[string]any{"event_id": strings.ToUpper(id), "reason": "illegal"}, bearer(modKey)...), 200)
		if ev := entry(r, "event"); r["status"] != "banned" || ev["id"] != id || ev["banned_by"] != "key:mod" {
			t.Fatalf("ban-event = %v", r)
		}
		if !list.EventBanned(id) || queued() != nil {
			t.Fatal("a banned event is not in the snapshot, or still queued")
		}
		r = mapOf(t, api.Do("GET", "/admin/banned-events", nil, bearer(viewerKey)...), 200)
		if evs := r["events"].([]any); len(evs) != 1 || evs[0].(map[string]any)["reason"] != "illegal" {
			t.Fatalf("banned events = %v", r)
		}
		mapOf(t, api.Do("POST", "/admin/unban-event", map[string]any{"event_id": id}, bearer(modKey)...), 200)
		if list.EventBanned(id) || queued() == nil {
			t.Fatal("an unbanned event is still hidden, or not queued again")
		}
		wantStatus(t, api.Do("POST", "/admin/unban-event", map[string]any{"event_id": id}, bearer(modKey)...), 404, "event_not_banned")

		// Allowing a banned event lifts its ban and takes it off the queue.
		mapOf(t, api.Do("POST", "/admin/ban-event", map[string]any{"event_id": id}, bearer(modKey)...), 200)
		r = mapOf(t, api.Do("POST", "/admin/allow-event", map[string]any{"event_id": id, "reason": "satire"}, bearer(modKey)...), 200)
		if ev := entry(r, "event"); r["status"] != "allowed" || ev["allowed_by"] != "key:mod" || ev["reason"] != "satire" {
			t.Fatalf("allow-event = %v", r)
		}
		if list.EventBanned(id) || queued() != nil {
			t.Fatal("an allowed event is still hidden, or still queued")
		}
		r = mapOf(t, api.Do("GET", "/admin/allowed-events", nil, bearer(viewerKey)...), 200)
		if evs := r["events"].([]any); len(evs) != 1 || evs[0].(map[string]any)["id"] != id {
			t.Fatalf("allowed events = %v", r)
		}
		if n := len(mapOf(t, api.Do("GET", "/admin/banned-events", nil, bearer(viewerKey)...), 200)["events"].([]any)); n != 0 {
			t.Fatalf("%d banned events after allow-event, want 0", n)
		}
		mapOf(t, api.Do("POST", "/admin/unallow-event", map[string]any{"event_id": id}, bearer(modKey)...), 200)
		if queued() == nil {
			t.Fatal("an event taken off the allow list is not queued again")
		}
		wantStatus(t, api.Do("POST", "/admin/unallow-event", map[string]any{"event_id": id}, bearer(modKey)...), 404, "event_not_allowed")
	})

	t.Run("audited", func(t *testing.T) {
		seen := map[string]bool{}
		for _, a := range mapOf(t, api.Do("GET", "/admin/audit?limit=1000", nil, bearer(adminKey)...), 200)["audit"].([]any) {
			if a := a.(map[string]any); a["actor"] == "key:mod" {
				seen[a["action"].(string)] = true
			}
		}
		for _, action := range []string{"pubkey.allow", "pubkey.unallow", "kind.allow", "kind.disallow", "kind.clear",
			"ip.block", "ip.unblock", "event.ban", "event.unban", "event.allow", "event.unallow"} {
			if !seen[action] {
				t.Errorf("no audit entry %s by key:mod", action)
			}
		}
	})
}

// accessBadInput are requests to the access lists that must be refused
// without a write (TestAPI's "bad input writes nothing").
func accessBadInput(hex string) []badRequest {
	id := strings.Repeat("5e", 32)
	return []badRequest{
		{"allow without pubkey", "/admin/allow-pubkey", map[string]any{"reason": "x"}, 400, "invalid_request"},
		{"allow bad pubkey", "/admin/allow-pubkey", map[string]any{"pubkey": "npub1nope"}, 400, "invalid_pubkey"},
		{"allow reason too long", "/admin/allow-pubkey", map[string]any{"pubkey": hex, "reason": strings.Repeat("r", 201)}, 400, "invalid_request"},
		{"unallow not allowed", "/admin/unallow-pubkey", map[string]any{"pubkey": hex}, 404, "pubkey_not_allowed"},
		{"kind missing", "/admin/allow-kind", map[string]any{}, 400, "invalid_request"},
		{"kind as string", "/admin/allow-kind", `{"kind": "1"}`, 400, "invalid_field"},
		{"kind fractional", "/admin/disallow-kind", `{"kind": 1.5}`, 400, "invalid_field"},
		{"kind negative", "/admin/allow-kind", map[string]any{"kind": -1}, 400, "invalid_kind"},
		{"kind too big", "/admin/disallow-kind", map[string]any{"kind": 65536}, 400, "invalid_kind"},
		{"clear unlisted kind", "/admin/clear-kind", map[string]any{"kind": 3}, 404, "kind_not_listed"},
		{"ip missing", "/admin/block-ip", map[string]any{"reason": "x"}, 400, "invalid_request"},
		{"ip not an address", "/admin/block-ip", map[string]any{"ip": "example.com"}, 400, "invalid_ip"},
		{"ip prefix too long", "/admin/block-ip", map[string]any{"ip": "10.0.0.0/33"}, 400, "invalid_ip"},
		{"ip with a zone", "/admin/block-ip", map[string]any{"ip": "fe80::1%eth0"}, 400, "invalid_ip"},
		{"ip reason too long", "/admin/block-ip", map[string]any{"ip": "10.0.0.1", "reason": strings.Repeat("r", 201)}, 400, "invalid_request"},
		{"unblock not blocked", "/admin/unblock-ip", map[string]any{"ip": "10.0.0.1"}, 404, "ip_not_blocked"},
		{"event id short", "/admin/ban-event", map[string]any{"event_id": id[:62]}, 400, "invalid_event_id"},
		{"event id missing", "/admin/allow-event", map[string]any{}, 400, "invalid_event_id"},
		{"unban event not banned", "/admin/unban-event", map[string]any{"event_id": id}, 404, "event_not_banned"},
		{"unallow event not allowed", "/admin/unallow-event", map[string]any{"event_id": id}, 404, "event_not_allowed"},
	}
}

// mapOf checks r's status and decodes its body.
func mapOf(t *testing.T, r *apitest.Response, status int) map[string]any {
	t.Helper()
	wantStatus(t, r, status, "")
	return r.Map(t)
}
