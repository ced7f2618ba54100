package relaytest

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/relay"
	"github.com/outpost-relay/outpost/store"
)

// Start serves an outpost relay with default limits on a store of its own,
// with a service key of its own: a relay elsewhere, for the code under test
// to talk to. It stops when the test ends.
func Start(t testing.TB) (*httptest.Server, *store.Store) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	_, pk := NewKey()
	rl := relay.New(relay.Config{Store: st, BanList: policies.NewBanList(), Log: log,
		PublicURL: "http://" + srv.Listener.Addr().String(), ServicePub: pk})
	srv.Config.Handler = rl
	Serve(t, srv, rl, st)
	return srv, st
}
