package mintdirapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi/banlistapi"
	"github.com/outpost-relay/outpost/httpapi/mintdirapi"
	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/policies"
)

// TestAudits: the audit wallet funded over the admin API at two mints on
// one Lightning network, a round between them, and the payee's entry in
// GET /mints/{id}/audits; bad deposits get the error contract.
func TestAudits(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.Open(t, storetest.Options{Log: log})
	network := &devmint.Network{}
	var ms []*devmint.Mint
	for _, name := range []string{"a", "b"} {
		node, err := network.NewNode("")
		if err != nil {
			t.Fatal(err)
		}
		m, err := devmint.Start(devmint.Options{Dir: filepath.Join(t.TempDir(), name), Node: node})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(); node.Close() })
		ms = append(ms, m)
	}
	const adminKey = "audit-admin-key-0123456789"
	bl, err := banlist.New(banlist.Config{DB: st.DB, Events: st.Events, List: policies.NewBanList(), SecretKey: nostr.GeneratePrivateKey(),
		Log: log, Settings: banlist.Settings{AdminKey: adminKey}})
	if err != nil {
		t.Fatal(err)
	}
	aud, err := audit.New(audit.Config{Settings: audit.DefaultSettings(), DB: st.DB, Log: log, Timeout: 10 * time.Second, PayeeWait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(aud.Close)
	dir := mintdir.New(mintdir.Config{DB: st.DB, Events: st.Events, Log: log,
		Settings: mintdir.Settings{ProbeInterval: time.Hour, ProbeTimeout: 2 * time.Second, AllowPrivate: true}})
	srv := httptest.NewServer(http.StripPrefix("/mintdir", mintdirapi.Routes(mintdirapi.Config{Directory: dir, Log: log,
		Audits: aud, Admin: banlistapi.RequireAdmin(bl)})))
	t.Cleanup(srv.Close)
	api := apitest.New(t, srv.URL+"/mintdir", mintdirapi.OpenAPI())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sub, err := dir.Submit(ctx, ms[0].URL)
	if err != nil {
		t.Fatal(err)
	}

	auth := []string{"Authorization", "Bearer " + adminKey}
	for _, c := range []struct {
		body    any
		headers []string
		status  int
		code    string
	}{
		{map[string]any{"mint_url": ms[0].URL, "amount": 100}, nil, 401, "unauthorized"},
		{map[string]any{"amount": 100}, auth, 400, "invalid_mint_url"},
		{map[string]any{"mint_url": ms[0].URL, "amount": -1}, auth, 400, "invalid_amount"},
		{map[string]any{"mint_url": ms[0].URL, "amount": 5000}, auth, 422, "over_cap"},
		{map[string]any{"token": "cashuBnonsense"}, auth, 400, "invalid_token"},
		{map[string]any{"token": "cashuBnonsense", "amount": 3}, auth, 400, "invalid_request"},
	} {
		r := api.Do("POST", "/admin/audit/deposit", c.body, c.headers...)
		if r.Status != c.status || r.ErrorCode() != c.code {
			t.Errorf("%v: got %d %s, want %d %s", c.body, r.Status, r.Body, c.status, c.code)
		}
	}
	for _, m := range ms {
		r := api.Do("POST", "/admin/audit/deposit", map[string]any{"mint_url": m.URL, "amount": 100}, auth...)
		var d audit.Deposit
		r.JSON(t, &d)
		if r.Status != 201 || d.Invoice == "" || d.State != audit.DepositUnpaid {
			t.Fatalf("deposit: %d %s", r.Status, r.Body)
		}
		if err := m.Node.PayInvoice(d.Invoice); err != nil {
			t.Fatal(err)
		}
	}
	var h audit.Holdings
	for len(h.Mints) < 2 || h.Mints[0].HeldSats+h.Mints[1].HeldSats != 200 {
		if ctx.Err() != nil {
			t.Fatalf("the deposits were never minted: %+v", h)
		}
		api.Do("GET", "/admin/audit", nil, auth...).JSON(t, &h)
	}
	if !h.Books.Balanced || h.Books.DepositedSats != 200 {
		t.Fatalf("books: %+v", h.Books)
	}
	if r, err := aud.Audit(ctx, ms[1].URL, ms[0].URL, 10); err != nil || r.Outcome != audit.OutcomeOK {
		t.Fatalf("round: %+v %v", r, err)
	}
	var list mintdirapi.AuditList
	api.Do("GET", "/mints/"+sub.ID.String()+"/audits", nil).JSON(t, &list)
	if len(list.Audits) != 1 || list.Audits[0].Role != audit.RolePayee || list.Audits[0].Outcome != audit.OutcomeOK || list.Audits[0].Counterpart != ms[1].URL {
		t.Fatalf("audits: %+v", list)
	}
	if r := api.Do("GET", "/mints/"+sub.ID.String()+"/audits?offset=1", nil); r.Status != 200 || string(r.Body) != "{\"audits\":[]}\n" {
		t.Fatalf("second page: %d %s", r.Status, r.Body)
	}
}
