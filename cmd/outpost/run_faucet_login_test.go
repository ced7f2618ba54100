package main

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

// TestFaucetLoginLimit: the faucet's per-IP login limit is the setting
// OUTPOST_FAUCET_LOGIN_LIMIT; 0 turns it off, and so does OUTPOST_RATE_LIMIT=0
// (which turns off every per-IP request limit).
func TestFaucetLoginLimit(t *testing.T) {
	t.Parallel()
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

// TestFaucetLoginReplayAcrossRestart: a NIP-98 login token is used once,
// also across a restart on the same data dir within its 60 s window (the
// address, and so the URL the token signs, stays the same).
func TestFaucetLoginReplayAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := freeAddr(t)
	env := map[string]string{"OUTPOST_ADDR": addr}
	header, err := nip98.Sign(nostr.GeneratePrivateKey(), "POST", "http://"+addr+"/faucet/auth/login", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	inst := start(t, dir, env)
	if code, m := call(t, "POST", inst.url+"/faucet/auth/login", nil, "Authorization", header); code != 200 {
		t.Fatalf("first login: %d %v", code, m)
	}
	replayed := func(when string, inst *instance) {
		t.Helper()
		code, m := call(t, "POST", inst.url+"/faucet/auth/login", nil, "Authorization", header)
		if d, _ := m["details"].(map[string]any); code != 401 || d["check"] != "replay" {
			t.Fatalf("the token again %s: %d %v, want 401 replay", when, code, m)
		}
	}
	replayed("at once", inst)
	inst.shutdown(t)
	inst.done = make(chan error, 1) // for the cleanup's shutdown
	inst.done <- nil
	replayed("after a restart", start(t, dir, env))
}
