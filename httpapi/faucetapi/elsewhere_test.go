package faucetapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/httpapi/faucetapi"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
)

// A node whose faucet runs on another answers every documented operation
// but the document with 503 faucet_elsewhere naming where it runs; each
// answer is checked against the document.
func TestElsewhere(t *testing.T) {
	t.Parallel()
	const primary = "https://primary.example/faucet"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := httpapi.New(httpapi.Config{Relay: http.NotFoundHandler(), Log: log,
		Services: []httpapi.Service{{Name: "faucet", Mount: "/faucet", Routes: faucetapi.Elsewhere(primary, log)}}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	api := apitest.New(t, srv.URL+"/faucet", faucetapi.OpenAPI())
	for _, op := range []struct{ method, path string }{
		{"GET", "/health"}, {"GET", "/config"}, {"GET", "/stats"}, {"GET", "/deposit?amount=100"},
		{"POST", "/auth/login"}, {"POST", "/claim/quote"}, {"POST", "/claim/confirm"}, {"GET", "/auth/me"},
	} {
		r := api.Do(op.method, op.path, map[string]any{})
		if r.Status != http.StatusServiceUnavailable || r.ErrorCode() != "faucet_elsewhere" {
			t.Fatalf("%s %s: %d %s", op.method, op.path, r.Status, r.Body)
		}
		if d, _ := r.Map(t)["details"].(map[string]any); d["faucet"] != primary {
			t.Fatalf("%s %s: %s does not name the faucet", op.method, op.path, r.Body)
		}
	}
	if r := api.Do("GET", "/openapi.json", nil); r.Status != http.StatusOK {
		t.Fatalf("the document: %d", r.Status)
	}
}
