package faucetapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elnosh/gonuts/wallet"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/faucetapi"
	"github.com/outpost-relay/outpost/internal/cashu/bolt11"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/cashu/lnurl"
	"github.com/outpost-relay/outpost/internal/cashu/treasury"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
	"github.com/outpost-relay/outpost/internal/nostr/profiles"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
	"github.com/outpost-relay/outpost/internal/testkit/faucettest"
	"github.com/outpost-relay/outpost/internal/testkit/lnurltest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

// Two real gonuts mints on one fake Lightning network serve every test:
// theMint is the faucet's; users with wallets at elsewhere get invoices
// that are paid over "Lightning" (invoices of the faucet's own mint are
// settled inside it, where no payment can fail or hang).
var theMint, elsewhere *devmint.Mint

func TestMain(m *testing.M) {
	// Three tests at a time under -short (it parses the flags; -short
	// leaves Nutshell out): the late swaps, the late receive and the stall
	// wait out the wallet's deadline idle. Not more: their claims share
	// in-process mints and deadlines, which four at a time on a loaded
	// machine ran out.
	testkit.ShortParallel(3)
	dir, err := os.MkdirTemp("", "faucetapi")
	if err != nil {
		panic(err)
	}
	theMint, err = devmint.Start(devmint.Options{Dir: filepath.Join(dir, "faucet-mint"), Name: "faucet mint"})
	if err != nil {
		panic(err)
	}
	elsewhere, err = devmint.Start(devmint.Options{Dir: filepath.Join(dir, "elsewhere"), Name: "another mint"})
	if err != nil {
		panic(err)
	}
	startNutshells(filepath.Join(dir, "nutshell"))
	code := m.Run()
	stopNutshells()
	theMint.Close()
	elsewhere.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is a faucet served with a relay on one badger store, as outpost
// serves it, with its own wallet at theMint and a Lightning-address server.
type env struct {
	t       *testing.T
	url     string // server URL; the faucet is at url + "/faucet"
	public  string // OUTPOST_PUBLIC_URL as the faucet knows it; url unless a test says otherwise
	api     *apitest.Client
	svc     *faucet.Service
	tr      *treasury.Treasury
	st      *store.Store
	clock   *testkit.Clock
	ln      *lnurltest.Server
	cfg     faucet.Config
	mintURL string // the faucet's mint
	// mintTimeout is the wallet's wait for the mint, each request: 5 s but
	// where a test waits for it to run out
	mintTimeout time.Duration
	log         *testkit.LogBuffer
	handler     atomic.Pointer[http.Handler]
	stop        func()
	rl          *relay.Relay
	slog        *slog.Logger
	ips         atomic.Int32
}

func baseConfig() faucet.Config {
	return faucet.Config{
		Settings: faucet.Settings{Network: bolt11.Signet, Enabled: true, MaxFeeSats: 10, NPubLogin: true,
			DepositMinSats: 1, DepositMaxSats: 100_000, MaxTokenSats: 10_000, PollInterval: 50 * time.Millisecond},
		TestMint: &faucet.TestMint{Pay: theMint.Node.PayInvoice},
	}
}

// newEnv starts a faucet funded with fundSats; mod adjusts its config.
func newEnv(t *testing.T, fundSats int64, mod func(*faucet.Config)) *env {
	t.Helper()
	return newEnvAt(t, "", fundSats, mod)
}

// newEnvAt is newEnv behind a public URL other than the server's own.
func newEnvAt(t *testing.T, public string, fundSats int64, mod func(*faucet.Config)) *env {
	t.Helper()
	return newEnvMint(t, public, theMint.URL, fundSats, mod)
}

// newEnvMint is a faucet whose wallet is at mintURL; opts adjust the env
// before the faucet is built.
func newEnvMint(t *testing.T, public, mintURL string, fundSats int64, mod func(*faucet.Config), opts ...func(*env)) *env {
	t.Helper()
	e := &env{public: public, t: t, clock: testkit.NewClock(time.Now().Truncate(time.Second)), log: &testkit.LogBuffer{}, cfg: baseConfig(), mintURL: mintURL,
		mintTimeout: 5 * time.Second}
	if mod != nil {
		mod(&e.cfg)
	}
	for _, o := range opts {
		o(e)
	}
	log := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := storetest.Open(t, storetest.Options{Log: log})
	e.st = st
	srv := httptest.NewUnstartedServer(nil)
	e.url = "http://" + srv.Listener.Addr().String()
	if e.public == "" {
		e.public = e.url
	}
	rl := relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: log, PublicURL: e.url, ServicePub: fmt.Sprintf("%064x", 1)})
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*e.handler.Load()).ServeHTTP(w, r) })
	srv.Config.ConnState = rl.TrackConn
	e.ln = lnurltest.New(t)
	e.rl, e.slog = rl, log
	e.build(rl, log)
	srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Close()
		rl.CloseClients(ctx)
		e.stop()
		if t.Failed() {
			t.Logf("faucet logs:\n%s", e.log)
		}
	})
	e.api = apitest.New(t, e.url+"/faucet", faucetapi.OpenAPI())
	if fundSats > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.svc.Fund(ctx, fundSats); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// build makes the faucet (again, for a restart) on the env's store and wallet.
func (e *env) build(rl *relay.Relay, log *slog.Logger) {
	t := e.t
	tr := faucettest.Treasury(t, e.st, e.mintURL, log, e.mintTimeout)
	cfg := e.cfg
	cfg.DB, cfg.Treasury, cfg.Log, cfg.Now = e.st.DB, tr, log, e.clock.Now
	cfg.LNURL = lnurl.New(lnurl.Options{AllowHTTP: true, AllowPrivate: true, Timeout: 2 * time.Second})
	var relays []string // a test's mod may name profile relays
	if e.cfg.Profiles != nil {
		relays = e.cfg.Profiles.Relays
	}
	cfg.Profiles = &profiles.Fetcher{Local: e.st.Events, Relays: relays, Timeout: 2 * time.Second, Log: log, Now: e.clock.Now}
	svc, err := faucet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	routes := faucetapi.Routes(faucetapi.Config{Service: svc, Verifier: nip98.NewVerifier(0, e.clock.Now, nil), PublicURL: e.public,
		Log: log, Now: e.clock.Now, LoginPerMin: 10_000, DepositPerMin: 10_000})
	h := httpapi.New(httpapi.Config{Relay: rl, Log: log, TrustedProxies: []string{"127.0.0.1/32"},
		Services: []httpapi.Service{{Name: "faucet", Mount: "/faucet", Routes: routes, Health: httpapi.ReportHealth(svc.Health)}}})
	e.handler.Store(&h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	go func() { tr.Watch(ctx); close(watched) }()
	e.svc, e.tr = svc, tr
	e.stop = func() {
		cancel()
		<-done
		<-watched
		tr.Close(context.Background())
	}
}

// user is a Nostr user with a Cashu wallet and a Lightning address whose
// invoices are mint quotes of that wallet.
type user struct {
	name, sk, pk, npub string
	ip                 string
	token              string
	mint               *devmint.Mint

	mu       sync.Mutex
	w        *wallet.Wallet
	lnQuotes []string // mint quotes made for Lightning-address invoices
	address  string
}

// newUser makes a user with a wallet at mint, a Lightning address on the
// env's server and, when profile is not nil, a kind-0 published to the relay.
func (e *env) newUser(name string, mint *devmint.Mint, profile map[string]any) *user {
	t := e.t
	t.Helper()
	u := &user{name: name, sk: nostr.GeneratePrivateKey(), mint: mint, ip: fmt.Sprintf("10.0.0.%d", e.ips.Add(1))}
	u.pk, _ = nostr.GetPublicKey(u.sk)
	u.npub = pubkey.NPub(u.pk)
	if mint == nil { // an identity only; the test gives it a wallet
		if profile != nil {
			e.publishProfile(u, profile, time.Now())
		}
		return u
	}
	w, err := wallet.LoadWallet(wallet.Config{WalletPath: t.TempDir(), CurrentMintURL: mint.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.mu.Lock(); w.Shutdown(); u.mu.Unlock() })
	u.w = w
	u.address = e.ln.Add(name, func(sats int64) (string, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		q, err := u.w.RequestMint(uint64(sats), mint.URL)
		if err != nil {
			return "", err
		}
		u.lnQuotes = append(u.lnQuotes, q.Quote)
		return q.Request, nil
	})
	if profile != nil {
		e.publishProfile(u, profile, time.Now())
	}
	return u
}

func (e *env) publishProfile(u *user, profile map[string]any, at time.Time) {
	e.t.Helper()
	content, _ := json.Marshal(profile)
	ev := nostr.Event{Kind: 0, CreatedAt: nostr.Timestamp(at.Unix()), Content: string(content), Tags: nostr.Tags{}}
	if err := ev.Sign(u.sk); err != nil {
		e.t.Fatal(err)
	}
	e.publish(ev)
}

// publish sends ev to the env's relay over a websocket of its own and
// waits for the OK. (go-nostr's client races with itself when its
// connection ends, which a proxied client's eventually does once the test
// binary outlives its 29-second ping; a connection per event avoids that.)
func (e *env) publish(ev nostr.Event) {
	e.t.Helper()
	if err := publishTo(e.url, ev); err != nil {
		e.t.Fatal(err)
	}
}

func publishTo(url string, ev nostr.Event) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := nostrclient.Dial(ctx, "ws"+strings.TrimPrefix(url, "http"), nostrclient.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	ok, reason, err := c.Publish(ctx, &ev)
	if err == nil && !ok {
		err = fmt.Errorf("relay refused %s: %s", ev.ID, reason)
	}
	return err
}

// invoice asks the user's wallet for an invoice (a mint quote).
func (u *user) invoice(t *testing.T, sats int64) (bolt11, quote string) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	q, err := u.w.RequestMint(uint64(sats), u.mint.URL)
	if err != nil {
		t.Fatal(err)
	}
	return q.Request, q.Quote
}

// mint mints a paid quote into the user's wallet: the proof a payment arrived.
func (u *user) mintQuote(t *testing.T, quote string) uint64 {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	n, err := u.w.MintTokens(quote)
	if err != nil {
		t.Fatalf("%s cannot mint quote %s: %v", u.name, quote, err)
	}
	return n
}

func (u *user) lastLNQuote(t *testing.T) string {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.lnQuotes) == 0 {
		t.Fatalf("%s's Lightning address was never asked for an invoice", u.name)
	}
	return u.lnQuotes[len(u.lnQuotes)-1]
}

func raw(body any) []byte {
	if body == nil {
		return nil
	}
	b, _ := json.Marshal(body)
	return b
}

// signed calls the faucet with a NIP-98 header made for this request. The
// clock moves a second first: the same request signed twice in one second
// is the same event, which the replay cache refuses.
func (e *env) signed(u *user, method, path string, body any) *apitest.Response {
	e.t.Helper()
	e.clock.Add(time.Second)
	b := raw(body)
	h, err := nip98.Sign(u.sk, method, e.public+"/faucet"+path, b, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return e.api.Do(method, path, b, "Authorization", h, "X-Forwarded-For", u.ip)
}

// as calls the faucet with the user's session token.
func (e *env) as(u *user, method, path string, body any) *apitest.Response {
	e.t.Helper()
	return e.api.Do(method, path, raw(body), "Authorization", "Bearer "+u.token, "X-Forwarded-For", u.ip)
}

func (e *env) login(u *user) map[string]any {
	e.t.Helper()
	r := e.signed(u, "POST", "/auth/login", nil)
	want(e.t, r, 200, "")
	m := r.Map(e.t)
	u.token = m["token"].(string)
	return m
}

func (e *env) loginNPub(u *user) map[string]any {
	e.t.Helper()
	r := e.api.Do("POST", "/auth/login-npub", map[string]any{"npub": u.npub}, "X-Forwarded-For", u.ip)
	want(e.t, r, 200, "")
	m := r.Map(e.t)
	u.token = m["token"].(string)
	return m
}

func want(t *testing.T, r *apitest.Response, status int, code string) {
	t.Helper()
	if r.Status != status || (code != "" && r.ErrorCode() != code) {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

func (e *env) stats() map[string]any {
	e.t.Helper()
	r := e.api.Do("GET", "/stats", nil)
	want(e.t, r, 200, "")
	return r.Map(e.t)
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func (e *env) quote(u *user, body map[string]any) map[string]any {
	e.t.Helper()
	r := e.as(u, "POST", "/claim/quote", body)
	want(e.t, r, 200, "")
	return r.Map(e.t)
}

func (e *env) relayForRestart() *relay.Relay { return e.rl }
func (e *env) logger() *slog.Logger          { return e.slog }
