package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/cashu/nuts/nut11"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/ecashtest"
	"github.com/outpost-relay/outpost/internal/testkit/hostile"
	"github.com/outpost-relay/outpost/internal/testkit/minttest"
	"github.com/outpost-relay/outpost/internal/testkit/relaytest"
)

// TestFaucetNutzap runs the nutzap payout (NIP-61) against the gonuts
// mint, which supports P2PK (NUT-10/11): every refusal, a nutzap that
// reaches outpost's relay and another relay while a third refuses it,
// whose proofs only the P2PK key's owner can spend, and an outpost killed
// (SIGKILL) after the mint made the locked proofs but before the event
// existed: the restart makes and publishes it, once.
func TestFaucetNutzap(t *testing.T) {
	t.Parallel()
	m := minttest.Start(t, devmint.Options{InputFeePpk: 100})
	proxy := hostile.New(t, m.URL)
	refusing := startRefusingRelay(t)
	other, _ := relaytest.Start(t)
	otherWS := "ws" + strings.TrimPrefix(other.URL, "http")
	dir := t.TempDir()
	addr := freeAddr(t) // one address for both runs: users' 10019s name its relay
	env := mintEnv(proxy.URL, map[string]string{"OUTPOST_FAUCET_FIXED_SATS": "21", "OUTPOST_FAUCET_NETWORK": "signet",
		"OUTPOST_FAUCET_NUTZAP_ALLOW_PRIVATE": "true", "OUTPOST_ADDR": addr})
	c := startChild(t, dir, env)
	f, ws := c.url+"/faucet", "ws"+strings.TrimPrefix(c.url, "http")
	_, dep := call(t, "GET", f+"/deposit?amount=2000", nil)
	if err := m.Node.PayInvoice(dep["invoice"].(string)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the deposit", func() bool { return stat(t, f, "balance_sats") == 2000 })
	_, cfg := call(t, "GET", f+"/config", nil)
	if !slices.Contains(anyStrings(cfg["payout_methods"]), "nutzap") {
		t.Fatalf("the mint supports NUT-11, yet /config offers %v", cfg["payout_methods"])
	}
	if _, _, page := fetchPage(t, "GET", f+"/", browserAccept); !strings.Contains(page, `value="nutzap"`) || !strings.Contains(page, "kind-10019") {
		t.Fatal("the faucet page does not offer nutzaps")
	}

	// The refusals, in turn, as the user's 10019 gets better.
	sk, bearer := login(t, f)
	pk, _ := nostr.GetPublicKey(sk)
	refused := func(code string) map[string]any {
		t.Helper()
		status, e := call(t, "POST", f+"/claim/quote", map[string]any{"method": "nutzap"}, bearer...)
		if status != 422 || e["error"] != code {
			t.Fatalf("quote: %d %v, want 422 %s", status, e, code)
		}
		return e
	}
	refused("no_nutzap_info")
	at := nostr.Now() - 100
	info := func(sk string, tags ...nostr.Tag) {
		t.Helper()
		at++
		ev := nostr.Event{Kind: 10019, CreatedAt: at, Tags: tags}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		publishTo(t, ws, ev)
	}
	info(sk, nostr.Tag{"mint", "https://mint.example.com", "sat"}, nostr.Tag{"relay", ws}, nostr.Tag{"pubkey", "02" + strings.Repeat("11", 32)})
	e := refused("nutzap_mint_not_accepted")
	if d, _ := e["details"].(map[string]any); !slices.Equal(anyStrings(d["mints"]), []string{proxy.URL}) {
		t.Fatalf("the refusal does not list the faucet's mint: %v", e)
	}
	info(sk, nostr.Tag{"mint", proxy.URL + "/", "sat"}, nostr.Tag{"relay", ws}, nostr.Tag{"pubkey", "05" + strings.Repeat("11", 32)})
	refused("invalid_p2pk_key")

	// Paid: outpost's relay and the other relay take the event, the third refuses it.
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	xonly := hex.EncodeToString(key.PubKey().SerializeCompressed()[1:])
	info(sk, nostr.Tag{"mint", proxy.URL + "/", "sat"}, nostr.Tag{"relay", ws}, nostr.Tag{"relay", otherWS}, nostr.Tag{"relay", refusing},
		nostr.Tag{"pubkey", xonly})
	code, q := call(t, "POST", f+"/claim/quote", map[string]any{"method": "nutzap", "event_id": strings.Repeat("ab", 32)}, bearer...)
	if code != 200 || q["destination"] != "02"+xonly {
		t.Fatalf("quote %d %v", code, q)
	}
	code, res := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": q["quote_id"]}, bearer...)
	if code != 200 || res["status"] != "paid" || res["token"] != nil {
		t.Fatalf("confirm %d %v", code, res)
	}
	nz := res["nutzap"].(map[string]any)
	if got := anyStrings(nz["relays"]); !slices.Contains(got, ws) || !slices.Contains(got, otherWS) || slices.Contains(got, refusing) {
		t.Fatalf("acknowledged by %v", got)
	}
	if why, _ := nz["refused"].(map[string]any)[refusing].(string); !strings.HasPrefix(why, "blocked:") {
		t.Fatalf("the refusal is not reported: %v", nz)
	}
	ev := oneNutzap(t, ws, pk)
	if ev.ID != nz["event_id"] || len(queryAt(t, otherWS, nostr.Filter{IDs: []string{ev.ID}})) != 1 {
		t.Fatalf("event %s, answered %v", ev.ID, nz["event_id"])
	}
	if u, e := ev.Tags.Find("u"), ev.Tags.Find("e"); u[1] != proxy.URL+"/" || e == nil || e[1] != strings.Repeat("ab", 32) {
		t.Fatalf("tags %v", ev.Tags)
	}
	redeem(t, m.URL, ev, key, xonly)
	nutzapOutcome(t, f, q["quote_id"].(string), ev.ID, bearer) // the answer again, nothing paid again

	// Killed between the swap and the event: the mint makes the locked
	// proofs, its answer is lost, and outpost dies while asking about it.
	sk2, bearer2 := login(t, f)
	pk2, _ := nostr.GetPublicKey(sk2)
	key2, _ := btcec.NewPrivateKey()
	xonly2 := hex.EncodeToString(key2.PubKey().SerializeCompressed()[1:])
	info(sk2, nostr.Tag{"mint", proxy.URL}, nostr.Tag{"relay", ws}, nostr.Tag{"pubkey", xonly2})
	_, q2 := call(t, "POST", f+"/claim/quote", map[string]any{"method": "nutzap"}, bearer2...)
	proxy.Add(hostile.Rule{Route: "/v1/swap", Fault: hostile.FailAfter, Times: 1})
	proxy.Add(hostile.Rule{Route: "/v1/checkstate", Fault: hostile.Stall})
	proxy.Add(hostile.Rule{Route: "/v1/restore", Fault: hostile.Stall})
	var wg sync.WaitGroup
	wg.Go(func() { tryCall("POST", f+"/claim/confirm", map[string]any{"quote_id": q2["quote_id"]}, bearer2...) })
	testkit.WaitFor(t, 30*time.Second, "the swap to be made and asked about", func() bool { return proxy.Count("/v1/checkstate") > 0 })
	if n := len(queryAt(t, ws, nostr.Filter{Kinds: []int{9321}, Tags: nostr.TagMap{"p": {pk2}}})); n != 0 {
		t.Fatalf("%d nutzaps before the crash", n)
	}
	c.kill()
	wg.Wait()
	proxy.Clear()
	c = startChild(t, dir, env)
	f = c.url + "/faucet"
	testkit.WaitFor(t, 60*time.Second, "the nutzap made after the restart", func() bool {
		return len(queryAt(t, ws, nostr.Filter{Kinds: []int{9321}, Tags: nostr.TagMap{"p": {pk2}}})) > 0
	})
	ev2 := oneNutzap(t, ws, pk2)
	redeem(t, m.URL, ev2, key2, xonly2)
	// The confirm the kill cut has its answer: the nutzap's event.
	nutzapOutcome(t, f, q2["quote_id"].(string), ev2.ID, bearer2)
	if code, r := call(t, "POST", f+"/claim/quote", map[string]any{"method": "nutzap"}, bearer2...); code != 429 {
		t.Fatalf("the cooldown of a paid claim: %d %v", code, r)
	}
	testkit.WaitFor(t, 20*time.Second, "no claim pending", func() bool { return stat(t, f, "pending_claims") == 0 })
	_, st := call(t, "GET", f+"/stats", nil)
	n := func(k string) int64 { v, _ := st[k].(float64); return int64(v) }
	in := 2000 + n("mint_surplus_sats")
	out := n("balance_sats") + n("total_paid_sats") + n("total_fee_sats") + n("in_flight_sats") + n("quarantined_sats") + n("lost_to_mint_sats")
	if n("total_claims") != 2 || n("total_paid_sats") != 42 || in != out {
		t.Fatalf("stats %v: in %d, out %d", st, in, out)
	}
	c.stop(t)
}

// startRefusingRelay serves a khatru relay that refuses nutzaps.
func startRefusingRelay(t *testing.T) string {
	k := khatru.NewRelay()
	k.RejectEvent = append(k.RejectEvent, func(_ context.Context, ev *nostr.Event) (bool, string) {
		return ev.Kind == 9321, "blocked: no nutzaps here"
	})
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// publishTo sends ev to the relay at url on a websocket of its own and
// waits for the OK.
func publishTo(t *testing.T, url string, ev nostr.Event) {
	t.Helper()
	ctx, c, done := dialWS(t, url)
	defer done()
	if ok, reason, err := c.Publish(ctx, &ev); err != nil || !ok {
		t.Fatalf("relay refused the event: %s %v", reason, err)
	}
}

// queryAt returns the stored events of url matching f.
func queryAt(t *testing.T, url string, f nostr.Filter) []*nostr.Event {
	t.Helper()
	ctx, c, done := dialWS(t, url)
	defer done()
	if err := c.Req(ctx, "q", f); err != nil {
		t.Fatal(err)
	}
	var out []*nostr.Event
	for {
		msg, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch msg.Label {
		case "EVENT":
			out = append(out, msg.Event)
		case "EOSE", "CLOSED":
			return out
		}
	}
}

// dialWS connects to the relay at url for 10 s at most; done hangs up.
func dialWS(t *testing.T, url string) (ctx context.Context, c *nostrclient.Conn, done func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	c, err := nostrclient.Dial(ctx, url, nostrclient.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return ctx, c, func() { c.Close(); cancel() }
}

// oneNutzap is the one nutzap to pk on url, signed by outpost.
func oneNutzap(t *testing.T, url, pk string) *nostr.Event {
	t.Helper()
	evs := queryAt(t, url, nostr.Filter{Kinds: []int{9321}, Tags: nostr.TagMap{"p": {pk}}})
	if len(evs) != 1 {
		t.Fatalf("%d nutzaps to %s", len(evs), pk)
	}
	if ok, _ := evs[0].CheckSignature(); !ok {
		t.Fatal("bad signature")
	}
	return evs[0]
}

// redeem checks a nutzap's proofs: locked to "02"+xonly, not spendable
// without the key's signature, worth 21 sats to its owner after the fee.
func redeem(t *testing.T, mint string, ev *nostr.Event, key *btcec.PrivateKey, xonly string) {
	t.Helper()
	var proofs cashu.Proofs
	for _, tag := range ev.Tags {
		if len(tag) == 2 && tag[0] == "proof" {
			var p cashu.Proof
			if err := json.Unmarshal([]byte(tag[1]), &p); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.Secret, `"data":"02`+xonly+`"`) || p.DLEQ == nil {
				t.Fatalf("proof %s", tag[1])
			}
			proofs = append(proofs, p)
		}
	}
	user := ecashtest.NewPayee(t, mint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := user.W.Receive(ctx, "", proofs); err == nil {
		t.Fatal("the proofs were spent without the key")
	}
	signed, err := nut11.AddSignatureToInputs(proofs, key)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := user.W.Receive(ctx, "", signed); err != nil || got != 21 {
		t.Fatalf("the key's owner received %d: %v", got, err)
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// nutzapOutcome checks that the status of a nutzap claim, and its confirm
// repeated, answer paid with the event eventID.
func nutzapOutcome(t *testing.T, f, quote, eventID string, bearer []string) {
	t.Helper()
	_, st := call(t, "GET", f+"/claims/"+quote, nil, bearer...)
	claim, _ := st["claim"].(map[string]any)
	nz, _ := claim["nutzap"].(map[string]any)
	if st["status"] != "paid" || nz["event_id"] != eventID {
		t.Fatalf("the claim's status %v, want paid with the event %s", st, eventID)
	}
	code, r := call(t, "POST", f+"/claim/confirm", map[string]any{"quote_id": quote}, bearer...)
	nz, _ = r["nutzap"].(map[string]any)
	if code != 200 || r["claim_id"] != claim["claim_id"] || nz["event_id"] != eventID {
		t.Fatalf("the confirm repeated: %d %v, want the claim %v", code, r, claim)
	}
}
