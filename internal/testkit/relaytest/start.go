package relaytest

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit/storetest"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
)

// Start serves an outpost relay with default limits on a store of its own,
// with a service key of its own: a relay elsewhere, for the code under test
// to talk to. It stops when the test ends.
func Start(t testing.TB) (*httptest.Server, *store.Store) {
	t.Helper()
	st := storetest.Open(t, storetest.Options{})
	srv := httptest.NewUnstartedServer(nil)
	_, pk := NewKey()
	rl := relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: slog.New(slog.DiscardHandler),
		PublicURL: "http://" + srv.Listener.Addr().String(), ServicePub: pk})
	srv.Config.Handler = rl
	Serve(t, srv, rl, nil)
	return srv, st
}
