package faucetapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
)

// TestContractEdges: openapi.json documents what the shared middleware can
// answer, and every operation answers HEAD, other methods, malformed
// queries, missing credentials, trailing and oversized bodies as it says.
func TestContractEdges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0, nil)
	u := e.newUser("edges", theMint, nil)
	e.login(u)
	e.api.AssertCommonStatuses()
	e.api.CheckEdges(map[string]string{"quote_id": "q_unknown"}, "Authorization", "Bearer "+u.token, "X-Forwarded-For", u.ip)
}

// Every operation, openapi.json and health included, is behind the
// per-client rate limit of the server, and documents its 429.
func TestEveryOperationIsRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0, nil)
	u := e.newUser("limited", theMint, nil)
	e.login(u)
	// The program-wide limit as cmd/outpost mounts it, of one request a
	// minute on the test's clock.
	inner := *e.handler.Load()
	var h http.Handler = httpapi.ClientIPMiddleware([]string{"127.0.0.1/32"})(httpapi.RateLimit(ratelimit.New(1, time.Minute, e.clock.Now))(inner))
	e.handler.Store(&h)
	want(t, e.as(u, "GET", "/auth/me", nil), 200, "") // the minute's one request
	e.api.CheckRateLimited(map[string]string{"quote_id": "q_unknown"}, "Authorization", "Bearer "+u.token, "X-Forwarded-For", u.ip)
}
