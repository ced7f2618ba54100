package main

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/mintdirtest"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// statusEvent is another monitor's status event for the mint at mintURL.
func statusEvent(sk, mintURL, status string, at time.Time) nostr.Event {
	return *mintdirtest.StatusEvent(sk, mintURL, status, at)
}

// TestFollowedMonitors runs outpost following three other monitors
// (OUTPOST_MONITORS): one publishes its signed status events to outpost's
// own relay, one to an upstream relay outpost syncs from (a real outpost
// relay), and one is banned here. The mint answers outpost's own checks
// throughout; when the two others see it offline, the mint is offline by
// consensus, and outpost's own status event still says what it sees
// itself. When one of them sees it up again, its dissent is listed but the
// mint is online.
func TestFollowedMonitors(t *testing.T) {
	t.Parallel()
	upSrv, _ := relaytest.Start(t)
	upstreamRelay, _ := relaytest.Dial(t, upSrv.URL)
	a, b, banned := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	aPK, _ := nostr.GetPublicKey(a)
	bPK, _ := nostr.GetPublicKey(b)
	bannedPK, _ := nostr.GetPublicKey(banned)

	mint := startTestMint(t, t.TempDir(), "", "Watched Mint")
	inst := start(t, t.TempDir(), map[string]string{
		"OUTPOST_MONITORS":            pubkey.NPub(aPK) + "," + bPK + "," + pubkey.NPub(bannedPK),
		"OUTPOST_UPSTREAM_RELAYS":     "ws" + strings.TrimPrefix(upSrv.URL, "http"),
		"OUTPOST_PROBE_ALLOW_PRIVATE": "true", "OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_PROBE_TIMEOUT": "500ms"})
	md := inst.url + "/mintdir"
	_, idx := call(t, "GET", inst.url+"/", nil)
	self := idx["pubkey"].(string)
	selfPK, _ := pubkey.Parse(self)
	if code, body := call(t, "POST", inst.url+"/banlist/admin/ban", map[string]any{"pubkey": bannedPK, "reason": "a monitor gone bad"}, admin()...); code != 200 {
		t.Fatalf("ban: %d %v", code, body)
	}
	_, sub := call(t, "POST", md+"/mints/submit", map[string]any{"mint_url": mint.URL})
	id, _ := sub["mint_id"].(string)
	statusOf := func() map[string]any {
		_, s := call(t, "GET", md+"/mints/"+id+"/status", nil)
		return s
	}
	testkit.WaitFor(t, 15*time.Second, "the mint online", func() bool { return statusOf()["status"] == "online" })

	// Two followed monitors see it offline: one says so on our relay, the
	// other on the upstream relay. The banned one's word is refused.
	now := time.Now()
	r := connect(t, inst)
	if err := publish(t, r, statusEvent(a, mint.URL, "offline", now)); err != nil {
		t.Fatal(err)
	}
	if err := relaytest.Publish(t, upstreamRelay, statusEvent(b, mint.URL, "offline", now)); err != nil {
		t.Fatal(err)
	}
	wantBlocked(t, publish(t, r, statusEvent(banned, mint.URL, "online", now)), "")
	testkit.WaitFor(t, 15*time.Second, "the mint offline by consensus", func() bool { return statusOf()["status"] == "offline" })

	vantages := func(s map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		vs, _ := s["vantages"].([]any)
		for _, v := range vs {
			v := v.(map[string]any)
			out[v["monitor"].(string)] = v
		}
		return out
	}
	s := statusOf()
	vs := vantages(s)
	if len(vs) != 3 || vs[self]["self"] != true || vs[self]["status"] != "online" || vs[self]["rtt_ms"] == nil ||
		vs[pubkey.NPub(aPK)]["status"] != "offline" || vs[pubkey.NPub(aPK)]["self"] != false || vs[pubkey.NPub(aPK)]["offline_since"] == nil ||
		vs[pubkey.NPub(bPK)]["status"] != "offline" || s["offline_since"] == nil {
		t.Fatalf("status with vantages: %v", s)
	}
	if _, byURL := call(t, "GET", md+"/mints/by-url/status?url="+mint.URL, nil); len(vantages(byURL)) != 3 {
		t.Fatalf("by url: %v", byURL)
	}
	_, incs := call(t, "GET", md+"/mints/"+id+"/incidents", nil)
	list, _ := incs["incidents"].([]any)
	if len(list) != 1 {
		t.Fatalf("incidents: %v", incs)
	}
	seen := list[0].(map[string]any)["seen_by"].([]any)
	if !slices.Contains(seen, any(pubkey.NPub(aPK))) || !slices.Contains(seen, any(pubkey.NPub(bPK))) || slices.Contains(seen, any(self)) {
		t.Fatalf("incident seen by %v", seen)
	}

	// Our own status event says what we see, and the consensus apart.
	testkit.WaitFor(t, 10*time.Second, "our status event with the consensus", func() bool {
		evs := query(t, r, nostr.Filter{Kinds: []int{38166}, Authors: []string{selfPK}, Tags: nostr.TagMap{"d": {mint.URL}}})
		return len(evs) == 1 && tagValue(evs[0], "status") == "online" &&
			slices.Equal(evs[0].Tags.Find("consensus"), nostr.Tag{"consensus", "offline", "2", "3"})
	})

	// b sees it up again: a's dissent is listed, the mint is online, the
	// incident closed.
	if err := relaytest.Publish(t, upstreamRelay, statusEvent(b, mint.URL, "online", now.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the mint online again", func() bool { return statusOf()["status"] == "online" })
	if vs := vantages(statusOf()); vs[pubkey.NPub(aPK)]["status"] != "offline" || vs[pubkey.NPub(bPK)]["status"] != "online" {
		t.Fatalf("vantages with a dissenter: %v", vs)
	}

	// The page shows them.
	resp, err := http.Get(md + "/mint/" + id)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"Seen from", "this outpost", pubkey.NPub(aPK), "Seen by"} {
		if !strings.Contains(string(page), want) {
			t.Fatalf("the mint page lacks %q", want)
		}
	}
}

// TestThreeMonitors runs three outposts that follow each other as
// monitors, each the others' upstream relay, and one test mint. All three
// see it online, 3 of 3; when it stops all three agree it is offline, and
// when it is back online again. Each node holds one status event per
// monitor for the mint: nothing loops or multiplies.
func TestThreeMonitors(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: three whole programs; mintdir's TestConsensus, TestFollowedMonitors and TestHostileMonitor cover the vantages in-process")
	}
	mintDir, mintAddr := t.TempDir(), freeAddr(t)
	mint := startTestMint(t, mintDir, mintAddr, "Shared Mint")
	type node struct {
		sk, pk, addr string
		inst         *instance
		id           string
	}
	nodes := make([]*node, 3)
	var npubs []string
	for i := range nodes {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		nodes[i] = &node{sk: sk, pk: pk, addr: freeAddr(t)}
		npubs = append(npubs, pubkey.NPub(pk))
	}
	for i, n := range nodes {
		var others []string
		for j, o := range nodes {
			if j != i {
				others = append(others, "ws://"+o.addr)
			}
		}
		n.inst = start(t, t.TempDir(), map[string]string{
			"OUTPOST_ADDR": n.addr, "OUTPOST_SECRET_KEY": n.sk,
			"OUTPOST_MONITORS":            strings.Join(npubs, ","), // its own key too: the same list on every node
			"OUTPOST_UPSTREAM_RELAYS":     strings.Join(others, ","),
			"OUTPOST_PROBE_ALLOW_PRIVATE": "true", "OUTPOST_PROBE_INTERVAL": "1s", "OUTPOST_PROBE_TIMEOUT": "500ms"})
		_, sub := call(t, "POST", n.inst.url+"/mintdir/mints/submit", map[string]any{"mint_url": mint.URL})
		n.id, _ = sub["mint_id"].(string)
	}
	agree := func(status string) {
		t.Helper()
		for i, n := range nodes {
			testkit.WaitFor(t, 30*time.Second, "node "+strconv.Itoa(i)+": "+status+", 3 vantages agreeing", func() bool {
				_, s := call(t, "GET", n.inst.url+"/mintdir/mints/"+n.id+"/status", nil)
				vs, _ := s["vantages"].([]any)
				if s["status"] != status || len(vs) != 3 {
					return false
				}
				for _, v := range vs {
					if v.(map[string]any)["status"] != status {
						return false
					}
				}
				return true
			})
		}
	}
	agree("online")
	mint.Close()
	agree("offline")
	mint = startTestMint(t, mintDir, mintAddr, "Shared Mint")
	agree("online")

	for i, n := range nodes {
		r := connect(t, n.inst)
		testkit.WaitFor(t, 10*time.Second, "node "+strconv.Itoa(i)+": one status event per monitor, 3 of 3 agreeing", func() bool {
			evs := query(t, r, nostr.Filter{Kinds: []int{38166}, Tags: nostr.TagMap{"d": {mint.URL}}})
			authors := map[string]bool{}
			for _, ev := range evs {
				authors[ev.PubKey] = true
				if tagValue(ev, "status") != "online" || !slices.Equal(ev.Tags.Find("consensus"), nostr.Tag{"consensus", "online", "3", "3"}) {
					return false
				}
			}
			return len(evs) == 3 && len(authors) == 3
		})
	}
}
