package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// plugin is `outpost strfry-policy` run through run(), fed as strfry feeds it.
type plugin struct {
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startPlugin(t *testing.T, args ...string) *plugin {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &plugin{in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() {
		err := run(context.Background(), append([]string{"strfry-policy"}, args...), func(string) string { return "" }, inR, outW, &testkit.LogBuffer{})
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Error("the plugin did not end with its input")
		}
	})
	return p
}

// decide writes a strfry input line for ev and reads the plugin's answer.
func (p *plugin) decide(t *testing.T, ev nostr.Event) (action, msg string) {
	t.Helper()
	line, _ := json.Marshal(map[string]any{"type": "new", "event": ev, "receivedAt": time.Now().Unix(), "sourceType": "IP4", "sourceInfo": "127.0.0.1"})
	go p.in.Write(append(line, '\n'))
	got := make(chan bool, 1)
	go func() { got <- p.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			t.Fatalf("the plugin ended: %v", p.out.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	var a struct{ ID, Action, Msg string }
	if err := json.Unmarshal(p.out.Bytes(), &a); err != nil || a.ID != ev.ID {
		t.Fatalf("answer %s to %s", p.out.Bytes(), ev.ID)
	}
	return a.Action, a.Msg
}

// TestStrfryPolicy runs the strfry plugin against a running outpost: it
// enforces the bans and words there, follows a new ban, and starts from
// its cache when the outpost is unreachable.
func TestStrfryPolicy(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), nil)
	banned, later := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	bannedPK, _ := nostr.GetPublicKey(banned)
	laterPK, _ := nostr.GetPublicKey(later)
	if code, _ := call(t, "POST", inst.url+"/banlist/admin/ban", map[string]any{"pubkey": bannedPK, "reason": "spam bot"}, admin()...); code != 200 {
		t.Fatal("ban")
	}
	if code, _ := call(t, "POST", inst.url+"/banlist/admin/words", map[string]any{"word": "free sats"}, admin()...); code != 201 {
		t.Fatal("word")
	}
	cache := filepath.Join(t.TempDir(), "banlist.json")
	p := startPlugin(t, "--from", inst.url+"/banlist", "--cache", cache, "--interval", "1s")

	if a, m := p.decide(t, note(t, banned, "hello", 1)); a != "reject" || m != "blocked: you are banned from this relay: spam bot" {
		t.Fatalf("a banned key's note: %s %q", a, m)
	}
	if a, m := p.decide(t, note(t, later, "get FREE sats here", 1)); a != "reject" || m != `blocked: contains the blocked word "free sats"` {
		t.Fatalf("a blocked word: %s %q", a, m)
	}
	if a, _ := p.decide(t, note(t, later, "hello", 1)); a != "accept" {
		t.Fatalf("a clean note: %s", a)
	}
	// The server's own address, as people type it, finds the ban list too.
	server := startPlugin(t, "--from", inst.url+"/", "--cache", filepath.Join(t.TempDir(), "server.json"))
	if a, m := server.decide(t, note(t, banned, "hello", 1)); a != "reject" || m != "blocked: you are banned from this relay: spam bot" {
		t.Fatalf("--from the server's base URL, a banned key's note: %s %q", a, m)
	}
	if code, _ := call(t, "POST", inst.url+"/banlist/admin/temp-ban", map[string]any{"pubkey": laterPK, "reason": "cool down",
		"expires_at": time.Now().Unix() + 3600}, admin()...); code != 200 {
		t.Fatal("temp-ban")
	}
	testkit.WaitFor(t, 10*time.Second, "the plugin to follow a new ban", func() bool {
		a, _ := p.decide(t, note(t, later, fmt.Sprint(time.Now().UnixNano()), 1))
		return a == "reject"
	})
	// The cache is a log of changes, a JSON line each (policies.Follower).
	testkit.WaitFor(t, 5*time.Second, "the cache to hold the new ban", func() bool {
		b, err := os.ReadFile(cache)
		return err == nil && strings.Contains(string(b), laterPK)
	})

	offline := startPlugin(t, "--from", "http://127.0.0.1:1/banlist", "--cache", cache)
	if a, _ := offline.decide(t, note(t, banned, "hello", 1)); a != "reject" {
		t.Fatalf("started offline from the cache: %s", a)
	}
	if a, _ := offline.decide(t, note(t, later, "hello", 1)); a != "reject" {
		t.Fatalf("started offline, the temporary ban: %s", a)
	}
}
