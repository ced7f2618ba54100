package banlistapi

import (
	"testing"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/testkit/apitest"
)

// TestTypesMatchTheDocument: the answers with a Go type of their own (the
// public lists are also what the console page decodes) match the document
// field for field. (The admin answers built as maps are checked against the
// document by every test's apitest client.)
func TestTypesMatchTheDocument(t *testing.T) {
	t.Parallel()
	apitest.MatchTypes(t, openAPI, map[string]any{
		"Error":          httpapi.ErrorBody{},
		"Health":         outpost.Health[banlist.HealthChecks]{},
		"BlockedList":    banlist.BlockedPubKeys{},
		"BlockedEntry":   banlist.BlockedPubKey{},
		"BlockedPage":    banlist.BlockedPage{},
		"WordList":       banlist.BlockedWords{},
		"BlockedChanges": pagedChanges{}, // next with ?limit only
		"WordChanges":    wordChanges{},
		"BanStatus":      banStatus{},
		"BanResult":      banResult{},
		"Ban":            banView{},
		"Report":         reportView{},
		"AllowedPubkey":  allowedView{},
		"APIKey":         banlist.APIKey{},
		"AuditEntry":     banlist.AuditEntry{},
		"KindRule":       banlist.KindRule{},
		"BlockedIP":      banlist.BlockedIP{},
		"Word":           banlist.Word{},
		"BannedEvent":    banlist.BannedEvent{},
		"AllowedEvent":   banlist.AllowedEvent{},
		"ReportedEvent":  banlist.ReportedEvent{},
	})
}
