package main

import (
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/pubkey"
)

// TestFaucetLoginLimit: the faucet's per-IP login limit is the setting
// OUTPOST_FAUCET_LOGIN_LIMIT; 0 turns it off, and so does OUTPOST_RATE_LIMIT=0
// (which turns off every per-IP request limit).
func TestFaucetLoginLimit(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		allowed int // logins in a row before a 429; 25: none
	}{
		{"OUTPOST_RATE_LIMIT=0 lifts it", nil, 25},
		{"OUTPOST_FAUCET_LOGIN_LIMIT=3", map[string]string{"OUTPOST_RATE_LIMIT": "1000", "OUTPOST_FAUCET_LOGIN_LIMIT": "3"}, 3},
		{"OUTPOST_FAUCET_LOGIN_LIMIT=0", map[string]string{"OUTPOST_RATE_LIMIT": "1000", "OUTPOST_FAUCET_LOGIN_LIMIT": "0"}, 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := start(t, t.TempDir(), tt.env)
			pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
			login := map[string]any{"npub": pubkey.NPub(pk)}
			for i := range 25 {
				code, m := call(t, "POST", inst.url+"/faucet/auth/login-npub", login)
				switch {
				case i < tt.allowed && code != 200:
					t.Fatalf("login %d: %d %v, want 200", i+1, code, m)
				case i == tt.allowed && (code != 429 || m["error"] != "rate_limit_exceeded"):
					t.Fatalf("login %d: %d %v, want 429 rate_limit_exceeded", i+1, code, m)
				case i == tt.allowed:
					return
				}
			}
		})
	}
}
