package main

import (
	"testing"
)

// TestAuditSwitch: audits are off by default (the admin routes answer 503
// audit_off to an admin key); OUTPOST_AUDIT=true serves the audit wallet,
// funded by a deposit at a real mint.
func TestAuditSwitch(t *testing.T) {
	t.Parallel()
	auth := []string{"Authorization", "Bearer " + testAdminKey}
	dir := t.TempDir()
	inst := start(t, dir, nil)
	if code, body := call(t, "GET", inst.url+"/mintdir/admin/audit", nil, auth...); code != 503 || body["error"] != "audit_off" {
		t.Fatalf("audits off: %d %v", code, body)
	}
	if code, _ := call(t, "GET", inst.url+"/mintdir/admin/audit", nil); code != 401 {
		t.Fatalf("without a key: %d", code)
	}
	inst.shutdown(t)

	mint := startTestMint(t, t.TempDir(), "", "Audited Mint")
	inst = start(t, dir, map[string]string{"OUTPOST_AUDIT": "true"})
	code, body := call(t, "POST", inst.url+"/mintdir/admin/audit/deposit", map[string]any{"mint_url": mint.URL, "amount": 100}, auth...)
	if code != 201 || body["invoice"] == "" || body["state"] != "unpaid" {
		t.Fatalf("deposit: %d %v", code, body)
	}
	code, body = call(t, "GET", inst.url+"/mintdir/admin/audit", nil, auth...)
	if books, _ := body["books"].(map[string]any); code != 200 || books["balanced"] != true {
		t.Fatalf("holdings: %d %v", code, body)
	}
}
