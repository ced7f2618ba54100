package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/pubkey"
)

// With no outpost running, admin commands open the data dir themselves, and
// a server started afterwards sees what they did.
func TestAdminCLIWithoutServer(t *testing.T) {
	dir := newDataDir(t)
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append(args, "--data-dir", dir), os.Getenv, nil, &out, io.Discard)
		return out.String(), err
	}
	out, err := cli("apikey", "create", "--name", "ops", "--role", "admin")
	if err != nil || !strings.HasPrefix(out, "opk_") {
		t.Fatalf("create: %v %q", err, out)
	}
	key := strings.TrimSpace(out)
	if _, err := cli("apikey", "create", "--name", "ops", "--role", "viewer"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a duplicate name: %v", err)
	}
	if _, err := cli("apikey", "create", "--name", "x", "--role", "root"); err == nil {
		t.Fatal("an unknown role was accepted")
	}
	pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey())
	if out, err := cli("ban", "add", pubkey.NPub(pk), "--reason", "offline ban", "--duration", "1h"); err != nil || !strings.Contains(out, "until") {
		t.Fatalf("ban add: %v %q", err, out)
	}
	if _, err := cli("ban", "add", "not-a-key", "--reason", "x"); err == nil {
		t.Fatal("a bad key was banned")
	}
	if _, err := cli("words", "add", "rugpull"); err != nil {
		t.Fatal(err)
	}
	out, _ = cli("ban", "list")
	if !strings.Contains(out, pubkey.NPub(pk)) || !strings.Contains(out, "offline ban") {
		t.Fatalf("ban list: %q", out)
	}
	out, _ = cli("apikey", "list")
	if !strings.Contains(out, "ops") || !strings.Contains(out, "admin") {
		t.Fatalf("apikey list: %q", out)
	}
	if _, err := cli("apikey", "bogus"); err == nil {
		t.Fatal("an unknown subcommand worked")
	}

	inst := start(t, dir, nil)
	_, status := call(t, "GET", inst.url+"/banlist/blocked/pubkeys/"+pk, nil)
	if status["blocked"] != true {
		t.Fatalf("the offline ban is not served: %v", status)
	}
	_, words := call(t, "GET", inst.url+"/banlist/blocked/words", nil)
	if !strings.Contains(strings.Join(toStrings(words["words"]), ","), "rugpull") {
		t.Fatalf("the offline word is not served: %v", words)
	}
	if code, _ := call(t, "GET", inst.url+"/banlist/admin/keys", nil, "Authorization", "Bearer "+key); code != 200 {
		t.Fatalf("the offline key does not work: %d", code)
	}
	// Revoked through the running server's socket: refused at once.
	if out, err := cli("apikey", "revoke", "ops"); err != nil || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %v %q", err, out)
	}
	if code, _ := call(t, "GET", inst.url+"/banlist/admin/keys", nil, "Authorization", "Bearer "+key); code != 401 {
		t.Fatalf("a revoked key: %d, want 401", code)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
