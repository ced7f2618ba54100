package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

// cliOn runs outpost's commands on the data dir dir, returning their stdout.
func cliOn(dir string) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append(args, "--data-dir", dir), os.Getenv, nil, &out, io.Discard)
		return out.String(), err
	}
}

// With no outpost running, admin commands open the data dir themselves, and
// a server started afterwards sees what they did.
func TestAdminCLIWithoutServer(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	cli := cliOn(dir)
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

// The allow list, address blocks, kind rules and event moderation from the
// command line: offline into the data dir, then through a running outpost's
// socket, where each change applies at once.
func TestAdminCLIAccessLists(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	cli := cliOn(dir)
	must := func(want string, args ...string) {
		t.Helper()
		if out, err := cli(args...); err != nil || !strings.Contains(out, want) {
			t.Fatalf("%v: %v %q, want %q", args, err, out, want)
		}
	}
	refused := func(want string, args ...string) {
		t.Helper()
		if _, err := cli(args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v: %v, want an error mentioning %q", args, err, want)
		}
	}
	memberSK, otherSK := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	member, _ := nostr.GetPublicKey(memberSK)
	id := strings.Repeat("ab", 32)

	must("allowed "+pubkey.NPub(member), "allow", "add", pubkey.NPub(member), "--reason", "member")
	must("blocked 198.51.100.0/24", "ip", "block", "198.51.100.7/24", "--reason", "scanner")
	must("kind 4 disallowed", "kind", "disallow", "4")
	must("banned event "+id, "event", "ban", strings.ToUpper(id), "--reason", "illegal")
	refused("not a valid", "allow", "add", "npub1nope")
	refused("IPv4 or IPv6", "ip", "block", "example.com")
	refused("not blocked", "ip", "unblock", "203.0.113.1")
	refused("not a kind number", "kind", "allow", "one")
	refused("from 0 to 65535", "kind", "allow", "70000")
	refused("64 hex", "event", "ban", "abc")
	refused("--state", "event", "list", "--state", "gone")

	inst := start(t, dir, nil)
	rl := connect(t, inst)
	// What the CLI did offline is in force.
	if err := publish(t, rl, note(t, otherSK, "not on the allow list", 1)); err == nil || !strings.Contains(err.Error(), "restricted: ") {
		t.Fatalf("a key off the allow list published: %v", err)
	}
	if err := publish(t, rl, note(t, memberSK, "a member", 1)); err != nil {
		t.Fatalf("an allowed key was refused: %v", err)
	}
	if err := publish(t, rl, note(t, memberSK, "dm", 4)); err == nil || !strings.Contains(err.Error(), "blocked:") {
		t.Fatalf("a disallowed kind was accepted: %v", err)
	}
	_, ips := call(t, "GET", inst.url+"/banlist/admin/blocked-ips", nil, admin()...)
	if list := ips["ips"].([]any); len(list) != 1 || list[0].(map[string]any)["blocked_by"] != "cli" {
		t.Fatalf("blocked ips over REST: %v", ips)
	}

	// Through the socket: a block of the caller's address closes its open
	// connection and refuses its next request, and the CLI (not behind the
	// block) lifts it. The go-nostr client must not hear the close (see
	// relaytest); a raw websocket does.
	inst.proxies[len(inst.proxies)-1].Freeze()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, inst.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	must("blocked 127.0.0.1", "ip", "block", "127.0.0.1", "--reason", "self")
	if code, body := call(t, "GET", inst.url+"/banlist/blocked/words", nil); code != 403 || body["error"] != "ip_blocked" {
		t.Fatalf("a blocked address: %d %v", code, body)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var ce *websocket.CloseError
	if _, _, err := ws.ReadMessage(); !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
		t.Fatalf("the open connection from the blocked address: %v, want close 1008", err)
	}
	must("unblocked 127.0.0.1", "ip", "unblock", "127.0.0.1")
	rl = connect(t, inst)
	if code, _ := call(t, "GET", inst.url+"/banlist/blocked/words", nil); code != 200 {
		t.Fatalf("after unblock: %d", code)
	}
	must("198.51.100.0/24  scanner", "ip", "list")

	must(pubkey.NPub(member)+"  member", "allow", "list")
	must("off the allow list", "allow", "remove", member)
	if err := publish(t, rl, note(t, otherSK, "the allow list is empty again", 1)); err != nil {
		t.Fatalf("with the allow list emptied: %v", err)
	}
	refused("not on the allow list", "allow", "remove", member)

	must("4     disallowed", "kind", "list")
	must("kind 4 has no rule now", "kind", "clear", "4")
	if err := publish(t, rl, note(t, memberSK, "dm", 4)); err != nil {
		t.Fatalf("a cleared kind is still refused: %v", err)
	}

	must(id+"  illegal", "event", "list")
	must("allowed event "+id, "event", "allow", id)
	must(id, "event", "list", "--state", "allowed")
	must("off the allow list", "event", "unallow", id)
	refused("not banned", "event", "unban", id)

	_, audit := call(t, "GET", inst.url+"/banlist/admin/audit?limit=100", nil, admin()...)
	actions := map[string]bool{}
	for _, e := range audit["audit"].([]any) {
		if e := e.(map[string]any); e["actor"] == "cli" {
			actions[e["action"].(string)] = true
		}
	}
	for _, a := range []string{"pubkey.allow", "pubkey.unallow", "ip.block", "ip.unblock", "kind.disallow", "kind.clear", "event.ban", "event.unban", "event.allow", "event.unallow"} {
		if !actions[a] {
			t.Errorf("no audit entry %s by cli (got %v)", a, actions)
		}
	}
}
