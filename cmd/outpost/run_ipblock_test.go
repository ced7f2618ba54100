package main

import (
	"context"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// TestWideIPBlockLocksNoAdminOut: blocking a range wider than a /16 needs
// an admin key and a confirmation; once everyone (0.0.0.0/0) is blocked,
// the relay and the services refuse the test's own address, but /health
// from loopback answers and the admins undo the block over REST and NIP-86.
func TestWideIPBlockLocksNoAdminOut(t *testing.T) {
	t.Parallel()
	adminSK, otherSK := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	adminPK, _ := nostr.GetPublicKey(adminSK)
	inst := start(t, t.TempDir(), map[string]string{"OUTPOST_ADMIN_PUBKEYS": adminPK})
	code, created := call(t, "POST", inst.url+"/banlist/admin/keys", map[string]any{"name": "mod", "role": "moderator"}, admin()...)
	if code != 201 {
		t.Fatalf("create a moderator key: %d %v", code, created)
	}
	mod := []string{"Authorization", "Bearer " + created["api_key"].(string)}
	everyone := map[string]any{"ip": "0.0.0.0/0", "reason": "oops", "confirm_wide": true}

	if code, m := call(t, "POST", inst.url+"/banlist/admin/block-ip", everyone, mod...); code != 403 || m["error"] != "forbidden" {
		t.Fatalf("a moderator blocks 0.0.0.0/0: %d %v, want 403 forbidden", code, m)
	}
	if code, m := call(t, "POST", inst.url+"/banlist/admin/block-ip", map[string]any{"ip": "198.51.100.0/24"}, mod...); code != 200 {
		t.Fatalf("a moderator blocks a /24: %d %v", code, m)
	}
	if code, m := call(t, "POST", inst.url+"/banlist/admin/block-ip", map[string]any{"ip": "0.0.0.0/0"}, admin()...); code != 400 || m["error"] != "confirmation_required" {
		t.Fatalf("an admin blocks 0.0.0.0/0 unconfirmed: %d %v, want 400 confirmation_required", code, m)
	}

	rpc := func(signer, method string, params ...any) (int, map[string]any) {
		return nip86(t, inst.url, signer, method, params...)
	}
	if code, m := rpc(adminSK, "blockip", "::/0", "oops"); code != 400 {
		t.Fatalf("NIP-86 blockip ::/0 unconfirmed: %d %v, want 400", code, m)
	}
	if code, m := rpc(adminSK, "blockip", "::/0", "oops", "confirm_wide"); code != 200 {
		t.Fatalf("NIP-86 blockip ::/0 confirmed: %d %v", code, m)
	}

	blockEveryone := func() {
		t.Helper()
		if code, m := call(t, "POST", inst.url+"/banlist/admin/block-ip", everyone, admin()...); code != 200 {
			t.Fatalf("an admin blocks 0.0.0.0/0 confirmed: %d %v", code, m)
		}
		if code, m := call(t, "GET", inst.url+"/banlist/blocked/words", nil); code != 403 || m["error"] != "ip_blocked" {
			t.Fatalf("a REST call from a blocked address: %d %v", code, m)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, resp, err := websocket.DefaultDialer.DialContext(ctx, inst.ws, nil); err == nil || resp == nil || resp.StatusCode != 403 {
			t.Fatalf("the websocket handshake from a blocked address: %v %v, want 403", resp, err)
		}
		for _, path := range []string{"/health", "/banlist/health", "/faucet/health"} {
			if code, m := call(t, "GET", inst.url+path, nil); code != 200 {
				t.Errorf("GET %s from loopback under a block: %d %v", path, code, m)
			}
		}
		if code, m := call(t, "POST", inst.url+"/banlist/admin/unblock-ip", map[string]any{"ip": "0.0.0.0/0"}, mod...); code != 403 || m["error"] != "ip_blocked" {
			t.Fatalf("a moderator unblocks from a blocked address: %d %v, want 403 ip_blocked", code, m)
		}
		if code, m := rpc(otherSK, "unblockip", "0.0.0.0/0"); code != 403 || m["error"] != "ip_blocked" {
			t.Fatalf("a non-admin NIP-86 unblockip from a blocked address: %d %v, want 403 ip_blocked", code, m)
		}
		if code, m := call(t, "GET", inst.url+"/banlist/admin/blocked-ips", nil, admin()...); code != 200 {
			t.Fatalf("an admin lists blocks from a blocked address: %d %v", code, m)
		}
	}

	blockEveryone()
	if code, m := call(t, "POST", inst.url+"/banlist/admin/unblock-ip", map[string]any{"ip": "0.0.0.0/0"}, admin()...); code != 200 {
		t.Fatalf("the admin key unblocks 0.0.0.0/0: %d %v", code, m)
	}
	if code, m := call(t, "GET", inst.url+"/banlist/blocked/words", nil); code != 200 {
		t.Fatalf("after the REST unblock: %d %v", code, m)
	}

	blockEveryone()
	if code, m := rpc(adminSK, "listblockedips"); code != 200 {
		t.Fatalf("NIP-86 listblockedips by an admin from a blocked address: %d %v", code, m)
	}
	if code, m := rpc(adminSK, "unblockip", "0.0.0.0/0"); code != 200 || m["result"] != true {
		t.Fatalf("NIP-86 unblockip by an admin from a blocked address: %d %v", code, m)
	}
	if code, m := call(t, "GET", inst.url+"/banlist/blocked/words", nil); code != 200 {
		t.Fatalf("after the NIP-86 unblock: %d %v", code, m)
	}
}
