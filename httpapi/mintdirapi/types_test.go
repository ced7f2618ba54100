package mintdirapi

import (
	"testing"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/audit"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
	"github.com/outpost-relay/outpost/mintdir"
	"github.com/outpost-relay/outpost/mintdir/resource"
)

// TestTypesMatchTheDocument: every answer of the document is a Go type the
// handlers return (and the pages decode), field for field.
func TestTypesMatchTheDocument(t *testing.T) {
	t.Parallel()
	types := map[string]any{
		"Error":         httpapi.ErrorBody{},
		"Mint":          resource.Mint{},
		"MintList":      resource.MintList{},
		"MintURLs":      resource.URLs{},
		"Metadata":      resource.Metadata{},
		"HistoryEntry":  resource.HistoryEntry{},
		"Status":        resource.Status{},
		"Uptime":        resource.Uptime{},
		"Timeseries":    resource.Timeseries{},
		"Incident":      resource.Incident{},
		"Trust":         resource.Trust{},
		"Review":        resource.Review{},
		"ReviewSummary": mintdir.ReviewSummary{},
		"Views":         resource.Views{},
		"Features":      resource.Features{},
		"Audit":         audit.Entry{},
		"Deposit":       audit.Deposit{},
		"AuditHoldings": audit.Holdings{},
		"SubmitResult":  resource.Submitted{},
		"Stats":         mintdir.Stats{},
		"Health":        outpost.Health[mintdir.HealthChecks]{},
	}
	for _, base := range []string{"/mints/{mint_id}", "/mints/by-url", "/v1/mints/{mint_id}", "/v1/mints/by-url"} {
		types["GET "+base+"/metadata/history"] = resource.History{}
		types["GET "+base+"/incidents"] = resource.Incidents{}
		types["GET "+base+"/reviews"] = resource.Reviews{}
		types["GET "+base+"/audits"] = AuditList{}
	}
	apitest.MatchTypes(t, openAPI, types)
	if u := apitest.Unmatched(t, openAPI, types); len(u) != 1 || u[0] != "GET /openapi.json" {
		t.Errorf("answers without a Go type: %v", u)
	}
}
