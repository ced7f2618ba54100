package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestWholeProgram runs outpost through run() and uses it as Nostr clients,
// frontends and operators do.
func TestWholeProgram(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	adminSK := nostr.GeneratePrivateKey()
	adminPK, _ := nostr.GetPublicKey(adminSK)
	_, operator := newKeyPair()
	inst := start(t, dir, map[string]string{"OUTPOST_ADMIN_PUBKEYS": pubkey.NPub(adminPK), "OUTPOST_RELAY_PUBKEY": pubkey.NPub(operator),
		"OUTPOST_RELAY_MAX_LIMIT": "300"})
	rl := connect(t, inst)

	badSK, goodSK := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	badPK, _ := nostr.GetPublicKey(badSK)
	goodPK, _ := nostr.GetPublicKey(goodSK)
	good := note(t, goodSK, "hello from a good key", 1)
	var restReport string
	var userReport nostr.Event

	t.Run("NIP-11", func(t *testing.T) {
		req, _ := http.NewRequest("GET", inst.url+"/", nil)
		req.Header.Set("Accept", "application/nostr+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var info struct {
			PubKey     string         `json:"pubkey"`
			Self       string         `json:"self"`
			NIPs       []int          `json:"supported_nips"`
			Limitation map[string]any `json:"limitation"`
		}
		json.NewDecoder(resp.Body).Decode(&info)
		key, _ := os.ReadFile(filepath.Join(dir, "service.key"))
		want, _ := nostr.GetPublicKey(strings.TrimSpace(string(key)))
		if info.Self != want || info.PubKey != operator {
			t.Errorf("NIP-11 self %q pubkey %q, want the service key %q and the operator %q", info.Self, info.PubKey, want, operator)
		}
		if !slices.Equal(info.NIPs, []int{1, 9, 11, 40, 42, 45, 56, 70, 77, 86, 87}) {
			t.Errorf("supported_nips %v", info.NIPs)
		}
		if info.Limitation["max_limit"] != 300.0 || info.Limitation["max_subscriptions"] != 50.0 {
			t.Errorf("limitation %v does not show the settings", info.Limitation)
		}
	})

	t.Run("ban over REST blocks at once", func(t *testing.T) {
		if code, _ := call(t, "POST", inst.url+"/banlist/admin/ban", map[string]any{"pubkey": pubkey.NPub(badPK), "reason": "spam bot"}, admin()...); code != 200 {
			t.Fatalf("ban: %d", code)
		}
		wantBlocked(t, publish(t, rl, note(t, badSK, "hello", 1)), "spam bot")
		if err := publish(t, rl, good); err != nil {
			t.Fatalf("a good key's note was rejected: %v", err)
		}
	})

	t.Run("temp ban lapses by itself", func(t *testing.T) {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		exp := time.Now().Unix() + 2
		if code, body := call(t, "POST", inst.url+"/banlist/admin/temp-ban", map[string]any{"pubkey": pk, "reason": "cool down", "expires_at": exp}, admin()...); code != 200 {
			t.Fatalf("temp-ban: %d %v", code, body)
		}
		wantBlocked(t, publish(t, rl, note(t, sk, "now?", 1)), "cool down")
		testkit.Past(time.Unix(exp, 0).Add(50 * time.Millisecond))
		if err := publish(t, rl, note(t, sk, "and now?", 1)); err != nil {
			t.Fatalf("after expires_at: %v", err)
		}
	})

	t.Run("blocked words", func(t *testing.T) {
		call(t, "POST", inst.url+"/banlist/admin/words", map[string]any{"word": "FreeSats"}, admin()...)
		wantBlocked(t, publish(t, rl, note(t, goodSK, "get your freesats here", 1)), "FreeSats")
		wantBlocked(t, publish(t, rl, note(t, goodSK, `{"name":"x","about":"FREESATS!"}`, 0)), "FreeSats")
		if err := publish(t, rl, note(t, goodSK, "freesatsy is not the word", 1)); err != nil {
			t.Fatalf("word boundary: %v", err)
		}
	})

	t.Run("CLI changes reach the running relay", func(t *testing.T) {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		var out bytes.Buffer
		err := run(context.Background(), []string{"ban", "add", pubkey.NPub(pk), "--reason", "from the cli", "--data-dir", dir}, os.Getenv, nil, &out, io.Discard)
		if err != nil || !strings.Contains(out.String(), "banned") {
			t.Fatalf("cli: %v %q", err, out.String())
		}
		wantBlocked(t, publish(t, rl, note(t, sk, "hi", 1)), "from the cli")
		// Through the socket too, the key alone is on stdout.
		out.Reset()
		var msgs bytes.Buffer
		if err := run(context.Background(), []string{"apikey", "create", "--name", "mod", "--role", "moderator", "--data-dir", dir}, os.Getenv, nil, &out, &msgs); err != nil {
			t.Fatal(err)
		}
		key := strings.TrimSuffix(out.String(), "\n")
		if !strings.HasPrefix(key, "opk_") || strings.ContainsAny(key, " \n") || !strings.Contains(msgs.String(), "shown only now") {
			t.Fatalf("apikey create over the socket: stdout %q, stderr %q", out.String(), msgs.String())
		}
		if code, _ := call(t, "POST", inst.url+"/banlist/admin/unban", map[string]any{"pubkey": pk}, "Authorization", "Bearer "+key); code != 200 {
			t.Fatalf("unban with the CLI-made key: %d", code)
		}
		if err := publish(t, rl, note(t, sk, "hi again", 1)); err != nil {
			t.Fatalf("after unban: %v", err)
		}
	})

	t.Run("NIP-86 only for admins", func(t *testing.T) {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		rpc := func(signer, method string, params ...any) (int, map[string]any) {
			return nip86(t, inst.url, signer, method, params...)
		}
		if code, m := rpc(goodSK, "banpubkey", pk, "nope"); code != 403 || m["error"] == nil {
			t.Fatalf("non-admin banpubkey: %d %v", code, m)
		}
		if code, m := rpc(adminSK, "banpubkey", pk, "nip86 ban"); code != 200 || m["error"] != nil && m["error"] != "" {
			t.Fatalf("admin banpubkey: %d %v", code, m)
		}
		wantBlocked(t, publish(t, rl, note(t, sk, "hi", 1)), "nip86 ban")
		_, status := call(t, "GET", inst.url+"/banlist/blocked/pubkeys/"+pk, nil)
		if status["blocked"] != true {
			t.Fatalf("REST does not see the NIP-86 ban: %v", status)
		}
		_, m := rpc(adminSK, "listbannedpubkeys")
		if !strings.Contains(fmt.Sprint(m["result"]), pk) {
			t.Fatalf("listbannedpubkeys = %v", m)
		}
		_, m = rpc(adminSK, "supportedmethods")
		if !strings.Contains(fmt.Sprint(m["result"]), "banevent") {
			t.Fatalf("supportedmethods = %v", m)
		}
		code, m := rpc(adminSK, "unbanpubkey", pk)
		if code != 200 || publish(t, rl, note(t, sk, "back", 1)) != nil {
			t.Fatalf("unbanpubkey: %d %v", code, m)
		}
		// allowpubkey is an allow list (NIP-86): only its keys publish while
		// it is not empty.
		if code, m := rpc(adminSK, "allowpubkey", pk, "member"); code != 200 || publish(t, rl, note(t, sk, "a member", 1)) != nil {
			t.Fatalf("allowpubkey: %d %v", code, m)
		}
		other := nostr.GeneratePrivateKey()
		if err := publish(t, rl, note(t, other, "not a member", 1)); err == nil || !strings.Contains(err.Error(), "restricted: ") {
			t.Fatalf("a key off a non-empty allow list: %v", err)
		}
		if code, m := rpc(adminSK, "unallowpubkey", pk); code != 200 || publish(t, rl, note(t, other, "open again", 1)) != nil {
			t.Fatalf("unallowpubkey: %d %v", code, m)
		}
		_, audit := call(t, "GET", inst.url+"/banlist/admin/audit", nil, admin()...)
		if !strings.Contains(fmt.Sprint(audit), "nip86:"+pubkey.NPub(adminPK)) {
			t.Fatalf("the NIP-86 ban is not audited with the admin's npub: %v", audit)
		}
	})

	t.Run("reports both ways", func(t *testing.T) {
		code, body := call(t, "POST", inst.url+"/banlist/reports", map[string]any{"reported_pubkey": badPK, "reason": "spam", "comment": "floods"})
		if code != 201 {
			t.Fatalf("report: %d %v", code, body)
		}
		restReport = body["report_id"].(string)
		userReport = note(t, goodSK, "impersonating me", 1984, nostr.Tag{"p", badPK, "impersonation"})
		if err := publish(t, rl, userReport); err != nil {
			t.Fatal(err)
		}
		if err := publish(t, rl, note(t, goodSK, "no target", 1984)); err == nil || !strings.Contains(err.Error(), "invalid:") {
			t.Fatalf("a report without a p tag: %v", err)
		}
		_, list := call(t, "GET", inst.url+"/banlist/reports", nil, admin()...)
		reports := list["reports"].([]any)
		if len(reports) != 2 {
			t.Fatalf("reports = %v", list)
		}
		// Both reports were made within the same second or two: find the
		// websocket one by id (NIP-01 orders ties by id, not by arrival).
		var wsReport map[string]any
		for _, r := range reports {
			if r := r.(map[string]any); r["report_id"] == userReport.ID {
				wsReport = r
			}
		}
		if wsReport == nil || wsReport["source"] != "nostr" || wsReport["reporter"] != pubkey.NPub(goodPK) || wsReport["type"] != "impersonation" {
			t.Fatalf("websocket report = %v in %v", wsReport, reports)
		}
	})

	t.Run("query back", func(t *testing.T) {
		evs := query(t, rl, nostr.Filter{Authors: []string{goodPK, badPK}, Kinds: []int{1}})
		if len(evs) != 2 {
			t.Fatalf("%d notes by the two keys, want the good key's two", len(evs))
		}
		for _, ev := range evs {
			if ev.PubKey == badPK {
				t.Fatalf("the banned key's event was stored: %v", ev)
			}
		}
		evs = query(t, rl, nostr.Filter{IDs: []string{restReport}})
		if len(evs) != 1 || evs[0].Kind != 1984 || evs[0].Tags.FindWithValue("p", badPK) == nil {
			t.Fatalf("the REST report is not a kind-1984 event on the relay: %v", evs)
		}
	})

	// A second start on the same data dir sees everything the first stored.
	t.Run("restart", func(t *testing.T) {
		inst.shutdown(t)
		inst.done = make(chan error, 1) // for the cleanup's shutdown of the old instance
		inst.done <- nil
		inst2 := start(t, dir, nil)
		rl2 := connect(t, inst2)
		wantBlocked(t, publish(t, rl2, note(t, badSK, "after restart", 1)), "spam bot")
		wantBlocked(t, publish(t, rl2, note(t, goodSK, "freesats again", 1)), "FreeSats")
		if evs := query(t, rl2, nostr.Filter{IDs: []string{good.ID, userReport.ID, restReport}}); len(evs) != 3 {
			t.Fatalf("%d of 3 events found after restart", len(evs))
		}
		_, list := call(t, "GET", inst2.url+"/banlist/reports", nil, admin()...)
		if len(list["reports"].([]any)) != 2 {
			t.Fatalf("reports lost across restart: %v", list)
		}
	})
}

func TestShutdownClosesClients(t *testing.T) {
	t.Parallel()
	inst := start(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.DefaultDialer.DialContext(ctx, inst.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testkit.WaitFor(t, 5*time.Second, "the server to see the client", func() bool { return strings.Contains(inst.logs.String(), "outpost started") })
	closed := make(chan error, 1)
	go func() {
		_, _, err := c.ReadMessage()
		closed <- err
	}()
	inst.shutdown(t)
	inst.done = make(chan error, 1)
	inst.done <- nil
	select {
	case err := <-closed:
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("client saw %v, want a going-away close frame", err)
		}
	case <-ctx.Done():
		t.Fatal("websocket client still connected after shutdown")
	}
}

func TestBadConfigNamesTheSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"OUTPOST_RATE_LIMIT": "lots"}, nil, "OUTPOST_RATE_LIMIT"},
		{map[string]string{"OUTPOST_ADDR": "nowhere"}, nil, "OUTPOST_ADDR"},
		{map[string]string{"OUTPOST_METRICS_ADDR": "nowhere"}, nil, "OUTPOST_METRICS_ADDR"},
		{map[string]string{"OUTPOST_PUBLIC_URL": "ftp://x"}, nil, "OUTPOST_PUBLIC_URL"},
		{map[string]string{"OUTPOST_ADMIN_PUBKEYS": "npub1nope"}, nil, "OUTPOST_ADMIN_PUBKEYS"},
		{map[string]string{"OUTPOST_LOG_LEVEL": "loud"}, nil, "OUTPOST_LOG_LEVEL"},
		{map[string]string{"OUTPOST_TRUSTED_PROXIES": "10.0.0.0/33"}, nil, "OUTPOST_TRUSTED_PROXIES"},
		{map[string]string{"OUTPOST_SECRET_KEY": "abc"}, nil, "OUTPOST_SECRET_KEY"},
		{map[string]string{"OUTPOST_BANLIST_MOUNT": "banlist"}, nil, "OUTPOST_BANLIST_MOUNT"},
		{map[string]string{"OUTPOST_FAUCET_MOUNT": "/static"}, nil, "OUTPOST_FAUCET_MOUNT"}, // the pages' assets
		{map[string]string{"OUTPOST_MINTDIR_MOUNT": "/qr"}, nil, "OUTPOST_MINTDIR_MOUNT"},
		{nil, []string{"--rate-limit", "-1"}, "OUTPOST_RATE_LIMIT"},
		{map[string]string{"OUTPOST_FAUCET_LOGIN_LIMIT": "-1"}, nil, "OUTPOST_FAUCET_LOGIN_LIMIT"},
		{map[string]string{"OUTPOST_RELAY_PUBKEY": "npub1nope"}, nil, "OUTPOST_RELAY_PUBKEY"},
		{map[string]string{"OUTPOST_RELAY_EVENTS_PER_MINUTE": "-1"}, nil, "OUTPOST_RELAY_EVENTS_PER_MINUTE"},
		{map[string]string{"OUTPOST_RELAY_MAX_LIMIT": "0"}, nil, "OUTPOST_RELAY_MAX_LIMIT"},
		{map[string]string{"OUTPOST_RELAY_DEFAULT_LIMIT": "501"}, nil, "OUTPOST_RELAY_DEFAULT_LIMIT"},
		{map[string]string{"OUTPOST_RELAY_MAX_MESSAGE_LENGTH": "100"}, nil, "OUTPOST_RELAY_MAX_MESSAGE_LENGTH"},
		{map[string]string{"OUTPOST_CACHE_SIZE": "big"}, nil, "OUTPOST_CACHE_SIZE"},
		{map[string]string{"OUTPOST_CACHE_SIZE": "512KiB"}, nil, "OUTPOST_CACHE_SIZE"},
		{map[string]string{"OUTPOST_MEMORY_LIMIT": "lots"}, nil, "OUTPOST_MEMORY_LIMIT"},
		{map[string]string{"OUTPOST_MEMORY_LIMIT": "64MiB"}, nil, "OUTPOST_MEMORY_LIMIT"},                                  // less than the cache and the memtables
		{map[string]string{"OUTPOST_MEMORY_LIMIT": "300MiB", "OUTPOST_CACHE_SIZE": "256MiB"}, nil, "OUTPOST_MEMORY_LIMIT"}, // less than a raised cache needs
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, testEnv(dir, tt.env), nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("env %v args %v: %v, want an error naming %s", tt.env, tt.args, err, tt.want)
		}
	}
}

func TestBusyPortAndLockedDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inst := start(t, dir, nil)
	addr := strings.TrimPrefix(inst.url, "http://")
	err := run(context.Background(), nil, testEnv(t.TempDir(), map[string]string{"OUTPOST_ADDR": addr}), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "OUTPOST_ADDR") {
		t.Errorf("busy port: %v", err)
	}
	err = run(context.Background(), nil, testEnv(dir, nil), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "in use by another outpost") {
		t.Errorf("locked data dir: %v", err)
	}
}

// A data dir of a development build's format (here, with the gonuts wallet
// the faucet kept before its own) is refused before anything is written,
// saying what to do.
func TestOtherFormatIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wallet := filepath.Join(dir, "faucet", "wallet", "wallet.db")
	if err := os.MkdirAll(filepath.Dir(wallet), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wallet, []byte("bolt"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // should it start, it stops
	defer cancel()
	err := run(ctx, nil, testEnv(dir, nil), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "outpost export") || !strings.Contains(err.Error(), "outpost import") {
		t.Errorf("run: %v, want the data dir refused, naming export and import", err)
	}
	if _, err := os.Stat(wallet); err != nil {
		t.Errorf("the wallet: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "badger")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a database was made in the refused data dir: %v", err)
	}
}
