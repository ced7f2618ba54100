package faucetapi

import (
	"testing"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
)

// TestTypesMatchTheDocument: every answer of the document is a Go type the
// handlers return (GET /config and /stats are also what the page decodes),
// field for field.
func TestTypesMatchTheDocument(t *testing.T) {
	t.Parallel()
	types := map[string]any{
		"ApiError":      httpapi.ErrorBody{},
		"Health":        outpost.Health[faucet.HealthChecks]{},
		"FaucetConfig":  faucet.PublicConfig{},
		"Stats":         faucet.Stats{},
		"DepositInfo":   faucet.DepositInfo{},
		"RedeemResult":  faucet.RedeemResult{},
		"LoginResult":   loginResponse{},
		"Me":            meResponse{},
		"Eligibility":   faucet.Eligibility{},
		"QuoteResult":   faucet.QuoteResult{},
		"ConfirmResult": faucet.ConfirmResult{},
		"ClaimStatus":   faucet.ClaimStatus{},
		"UserProfile":   faucet.UserProfile{},
	}
	apitest.MatchTypes(t, openAPI, types)
	if u := apitest.Unmatched(t, openAPI, types); len(u) != 2 || u[0] != "GET /openapi.json" || u[1] != "POST /deposit/simulate-payment" {
		t.Errorf("answers without a Go type: %v", u)
	}
}
