package mintdirapi_test

import (
	"testing"
	"time"

	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
)

// TestContractEdges: openapi.json documents what the shared middleware can
// answer, and every operation answers HEAD, other methods, malformed
// queries, trailing and oversized bodies as it says.
func TestContractEdges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, 0)
	r := e.api.Do("POST", "/mints/submit", map[string]string{"mint_url": "http://127.0.0.1:1"})
	wantStatus(t, r, 202, "")
	e.api.AssertCommonStatuses()
	e.api.CheckEdges(map[string]string{"mint_id": r.Map(t)["mint_id"].(string)})
}

// Every operation, openapi.json and health included, is behind the
// per-client rate limit, and documents its 429.
func TestEveryOperationIsRateLimited(t *testing.T) {
	t.Parallel()
	now := time.Now()
	e := newEnvLimited(t, true, 0, ratelimit.New(1, time.Minute, func() time.Time { return now }))
	wantStatus(t, e.api.Do("GET", "/health", nil), 200, "") // the minute's one request
	e.api.CheckRateLimited(map[string]string{"mint_id": "00000000-0000-4000-8000-000000000000"})
}
