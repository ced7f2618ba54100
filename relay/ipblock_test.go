package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/internal/testkit"
	"github.com/outpost-relay/outpost/policies"
)

// A connection the block did not reach when it was made (one admitted as
// the block came in) is dropped at its next message.
func TestBlockedAddressCheckedOnEveryMessage(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	list := policies.NewBanList()
	r := New(Config{Store: st, BanList: list, Log: log, PublicURL: "http://127.0.0.1",
		ClientIP: func(req *http.Request) string { return req.Header.Get("X-Client-IP") }})
	srv := httptest.NewServer(r)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r.CloseClients(ctx)
		st.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), http.Header{"X-Client-IP": {"192.0.2.7"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	testkit.WaitFor(t, 10*time.Second, "the client to be admitted", func() bool { return r.Clients() == 1 })
	r.mu.Lock()
	clear(r.clients) // as if the block came while it was being admitted
	r.mu.Unlock()

	// The block's watcher cannot see this connection now; only the check
	// of its next message can find it (without it, the REQ gets its EOSE).
	list.BlockIP(policies.BlockedIP{Prefix: netip.MustParsePrefix("192.0.2.0/24")})
	ws.WriteMessage(websocket.TextMessage, []byte(`["REQ","s",{}]`))
	ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
		t.Fatalf("after a message from a blocked address: %v, want a 1008 close", err)
	}
}
