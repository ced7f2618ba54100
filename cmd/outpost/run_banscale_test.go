package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	pub "github.com/outpost-relay/outpost/internal/nostr/publish"
	"github.com/outpost-relay/outpost/internal/testkit"
)

// TestBanListAtScale is issue #52's whole-program check, at 200,000 bans
// (5,000 under -short: still every one of the 256 pages of two hex digits
// filled, only the splits of full pages left to package publish's tests): a spam wave loaded through the bulk endpoint is
// published as pages that the real strfry, with its default limits, takes
// from outpost as its publish relay, and reading them back from strfry
// gives exactly the list; a follower (a second outpost) and strfry with our
// plugin enforce the whole list, and a key banned afterwards within 5 s.
//
// The wave is loaded before strfry is named a publish relay; outpost is
// then restarted with it, so the pages reach strfry as a restart offers
// them (signed before, never sent), and the plugin, which strfry starts
// at the first event it is sent, starts from the list in pages. (A plugin
// or follower running through the wave would take 200,000 bans as one
// ?since= answer, which the loaded machine does not give within the
// followers' 10 s: the follower side's subject, not this test's.)
func TestBanListAtScale(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 5_000
		t.Logf("-short: %d bans instead of 200,000", n)
		// The full run has the machine to itself for the 5 s it holds
		// enforcement to; -short does not hold it to that, and shares.
		t.Parallel()
	}
	bin := strfryBinary(t)
	dir, addr := newDataDir(t), freeAddr(t)
	primary := "http://" + addr
	loading := start(t, dir, map[string]string{"OUTPOST_ADDR": addr})
	// One key of the wave is one the test can sign for.
	waveSK := nostr.GeneratePrivateKey()
	wavePK, _ := nostr.GetPublicKey(waveSK)
	keys := append(waveKeys(n-1), wavePK)
	began := time.Now()
	banInBulk(t, loading, keys)
	t.Logf("%d bans loaded through POST /banlist/admin/bans in %s", n, time.Since(began).Round(time.Millisecond))
	loading.shutdown(t)

	plugin, pluginLog := pluginScript(t, primary+"/banlist")
	strfryURL := newStrfryDB(t, bin, plugin).serve(t)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(pluginLog)
			t.Logf("plugin log, tail:\n%s", tail(string(b), 4000))
		}
	})
	began = time.Now()
	inst := start(t, dir, map[string]string{"OUTPOST_ADDR": addr, "OUTPOST_PUBLISH_RELAYS": strfryURL})

	service := servicePubKey(t, inst)
	stats := wantPublished(t, strfryURL, service, keys)
	t.Logf("strfry holds the list %s after the restart: %d pages read, the largest %d bytes and %d tags",
		time.Since(began).Round(time.Millisecond), stats.pages, stats.maxBytes, stats.maxTags)
	if _, h := call(t, "GET", inst.url+"/banlist/health", nil); h["status"] != "ok" {
		t.Fatalf("the primary's ban list health: %v", h)
	}
	// A refusal while strfry's plugin is still starting (it answers
	// "internal error" then) is tried again; what counts is that none is
	// left: strfry holds the list, and health names no refused page.
	m, _ := scrape(t, inst.url+"/metrics")
	if got := value(m, "outpost_publish_events_total", "relay", strfryURL, "outcome", "refused"); got > 0 {
		t.Logf("strfry refused %v publications before it took them", got)
	}

	follower := start(t, newDataDir(t), map[string]string{"OUTPOST_BANLIST_FOLLOW": primary + "/banlist"})
	testkit.WaitFor(t, 5*time.Minute, "the follower to hold the whole list", func() bool {
		_, h := call(t, "GET", follower.url+"/banlist/health", nil)
		c, _ := h["checks"].(map[string]any)
		return c != nil && c["active_bans"] == float64(n)
	})
	// One connection to each, for the whole test: a new one a poll would
	// meet the relay's limits on connections.
	relays := map[string]*nostrclient.Conn{"strfry with our plugin": dialFor(t, strfryURL), "the follower": dialFor(t, follower.ws)}
	for name, c := range relays {
		if ok, reason := tryPublish(t, c, note(t, waveSK, "hello", 1)); ok {
			t.Fatalf("%s took a note of a key of the wave (%s)", name, reason)
		}
	}

	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	for name, c := range relays {
		if ok, reason := tryPublish(t, c, note(t, sk, "before the ban", 1)); !ok {
			t.Fatalf("%s refused a key not banned yet: %s", name, reason)
		}
	}
	if code, body := call(t, "POST", inst.url+"/banlist/admin/ban", map[string]any{"pubkey": pk, "reason": "late spammer"}, admin()...); code != 200 {
		t.Fatalf("ban: %d %v", code, body)
	}
	banned := time.Now()
	for name, c := range relays {
		// Waited for under a generous deadline, then held to the target
		// of 5 s, except under -short (a loaded machine, a smaller list).
		testkit.WaitFor(t, time.Minute, name+" to refuse the new ban", func() bool {
			ok, _ := tryPublish(t, c, note(t, sk, fmt.Sprint(time.Now().UnixNano()), 1))
			return !ok
		})
		took := time.Since(banned)
		t.Logf("%s refused the new ban %s after it was made", name, took.Round(time.Millisecond))
		if took > 5*time.Second && !testing.Short() {
			t.Errorf("%s took %s to enforce a new ban, over 5 s", name, took)
		}
	}
	wantPublished(t, strfryURL, service, append(keys, pk))
}

// pluginScript writes the executable strfry runs as its write policy:
// outpost strfry-policy following from, its log in the file returned.
func pluginScript(t *testing.T, from string) (path, log string) {
	t.Helper()
	dir := t.TempDir()
	path, log = filepath.Join(dir, "policy.sh"), filepath.Join(dir, "policy.log")
	script := fmt.Sprintf("#!/bin/sh\nexec %q strfry-policy --from %q --cache %q --interval 1s 2>>%q\n",
		outpostBinary(t), from, filepath.Join(dir, "cache.json"), log)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path, log
}

// waveKeys are n distinct valid public keys spread over the key space, as
// a spam wave's are (not sharing a prefix, as counting up would).
func waveKeys(n int) []string {
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		sum := sha256.Sum256(fmt.Append(nil, i))
		if k, err := pubkey.Parse(fmt.Sprintf("%x", sum)); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// banInBulk bans keys through POST /banlist/admin/bans, a full batch of
// NDJSON a request, each under a deadline long enough for a machine
// loaded by -race and other builds.
func banInBulk(t *testing.T, inst *instance, keys []string) {
	t.Helper()
	for batch := range slices.Chunk(keys, banlist.MaxBatch) {
		var body bytes.Buffer
		for _, k := range batch {
			fmt.Fprintf(&body, "{\"pubkey\":%q,\"reason\":\"spam wave\"}\n", k)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		req, _ := http.NewRequestWithContext(ctx, "POST", inst.url+"/banlist/admin/bans", &body)
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set(admin()[0], admin()[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("bulk ban: %v", err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != 200 {
			t.Fatalf("bulk ban: %d %s", resp.StatusCode, answer)
		}
	}
}

func servicePubKey(t *testing.T, inst *instance) string {
	t.Helper()
	_, idx := call(t, "GET", inst.url+"/", nil)
	pk, err := pubkey.Parse(fmt.Sprint(idx["pubkey"]))
	if err != nil {
		t.Fatalf("GET / names no service key: %v", idx)
	}
	return pk
}

// pageStats are what a reading of the pages saw.
type pageStats struct{ pages, maxBytes, maxTags int }

// wantPublished waits until the pages service published on the relay at
// url read back, as any reader reads them (pub.ReadList), as exactly
// keys, and says how big the pages were.
func wantPublished(t *testing.T, url, service string, keys []string) pageStats {
	t.Helper()
	want := slices.Sorted(slices.Values(keys))
	var st pageStats
	var got []string
	var err error
	// A whole reading a second at most.
	testkit.WaitEvery(t, 10*time.Minute, time.Second, fmt.Sprintf("%s to hold the %d bans", url, len(keys)), func() bool {
		got, st, err = readPublished(url, service)
		return err == nil && slices.Equal(got, want)
	})
	return st
}

// readPublished reads the ban list service publishes on the relay at url.
func readPublished(url, service string) ([]string, pageStats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := nostrclient.Dial(ctx, url, nostrclient.Options{})
	if err != nil {
		return nil, pageStats{}, err
	}
	defer c.Close()
	var st pageStats
	fetch := pub.RelayFetch(c)
	measured := func(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
		evs, err := fetch(ctx, f)
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			st.pages++
			st.maxBytes, st.maxTags = max(st.maxBytes, len(b)), max(st.maxTags, len(ev.Tags))
		}
		return evs, err
	}
	l, err := pub.ReadList(ctx, measured, service)
	if err != nil {
		return nil, st, err
	}
	out := make([]string, len(l.Bans))
	for i, tag := range l.Bans {
		out[i] = tag[1]
	}
	slices.Sort(out)
	return out, st, nil
}

// dialFor connects to the relay at url until the test ends.
func dialFor(t *testing.T, url string) *nostrclient.Conn {
	t.Helper()
	// Dial's context is the connection's life; DialTimeout bounds the handshake.
	c, err := nostrclient.Dial(context.Background(), url, nostrclient.Options{DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// tryPublish sends ev over c and says whether the relay took it, and if
// not why.
func tryPublish(t *testing.T, c *nostrclient.Conn, ev nostr.Event) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ok, reason, err := c.Publish(ctx, &ev)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return ok, reason
}
