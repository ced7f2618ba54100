// Package relay is outpost's Nostr relay: a khatru relay on the shared badger
// store that enforces the ban list as its write policy, answers NIP-11 with
// the service's key and serves NIP-86 management to the configured admins.
package relay

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/khatru"
	kpolicies "github.com/fiatjaf/khatru/policies"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip11"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/policies"
	"github.com/outpost-relay/outpost/store"
)

// Config configures the relay.
type Config struct {
	Store       *store.Store
	BanList     *policies.BanList
	Log         *slog.Logger
	PublicURL   string // http(s) base URL of this outpost
	ServicePub  string // hex
	Name        string
	Description string
	Contact     string
}

// maxFuture is how far in the future created_at may be. Events beyond it
// would also hide from queries that start at "now".
const maxFuture = 15 * time.Minute

// Relay wraps the khatru relay with what serving it from our own http.Server
// needs: client tracking for shutdown and NIP-86 gating.
type Relay struct {
	*khatru.Relay
	store *store.Store
	log   *slog.Logger
	url   string

	mu      sync.Mutex
	clients map[*khatru.WebSocket]struct{}
	conns   map[net.Conn]struct{} // hijacked websocket connections

	nip86 *management // nil until EnableManagement
}

// New builds the relay.
func New(cfg Config) *Relay {
	rl := khatru.NewRelay()
	r := &Relay{Relay: rl, store: cfg.Store, log: cfg.Log, url: strings.TrimSuffix(cfg.PublicURL, "/"),
		clients: map[*khatru.WebSocket]struct{}{}, conns: map[net.Conn]struct{}{}}
	rl.Log = slog.NewLogLogger(cfg.Log.With("component", "khatru").Handler(), slog.LevelWarn)
	rl.ServiceURL = r.url

	ev := cfg.Store.Events
	rl.StoreEvent = append(rl.StoreEvent, ev.SaveEvent)
	rl.QueryEvents = append(rl.QueryEvents, ev.QueryEvents)
	rl.DeleteEvent = append(rl.DeleteEvent, ev.DeleteEvent)
	rl.ReplaceEvent = append(rl.ReplaceEvent, ev.ReplaceEvent)
	rl.CountEvents = append(rl.CountEvents, ev.CountEvents)

	rl.RejectEvent = append(rl.RejectEvent,
		kpolicies.PreventTimestampsInTheFuture(maxFuture),
		kpolicies.PreventLargeTags(1024),
		policies.RejectBannedAuthors(cfg.BanList),
		policies.RejectBannedEvents(cfg.BanList),
		policies.RejectBlockedWords(cfg.BanList),
		banlist.RejectInvalidReports,
	)

	rl.Info.Name = cfg.Name
	rl.Info.Description = cfg.Description
	rl.Info.PubKey = cfg.ServicePub
	rl.Info.Contact = cfg.Contact
	rl.Info.Software = "https://github.com/outpost-relay/outpost"
	rl.Info.Version = outpost.Version
	// NIP-09 and NIP-45 are added by khatru because DeleteEvent and
	// CountEvents are set; NIP-86 when EnableManagement runs.
	rl.Info.SupportedNIPs = []any{1, 11, 40, 42, 56, 70}
	rl.Info.Limitation = &nip11.RelayLimitationDocument{
		MaxMessageLength:    int(rl.MaxMessageSize),
		MaxLimit:            1000,
		DefaultLimit:        250,
		CreatedAtUpperLimit: int64(maxFuture.Seconds()),
	}

	rl.OnConnect = append(rl.OnConnect, func(ctx context.Context) {
		if ws := khatru.GetConnection(ctx); ws != nil {
			r.mu.Lock()
			r.clients[ws] = struct{}{}
			r.mu.Unlock()
		}
	})
	rl.OnDisconnect = append(rl.OnDisconnect, func(ctx context.Context) {
		if ws := khatru.GetConnection(ctx); ws != nil {
			r.mu.Lock()
			delete(r.clients, ws)
			r.mu.Unlock()
		}
	})
	return r
}

// Publish stores an event the service made itself and sends it to matching
// subscriptions. It skips the write policies: the service's own events (e.g.
// reports quoting abusive text) must not be refused by them.
func (r *Relay) Publish(ctx context.Context, ev *nostr.Event) error {
	if err := r.store.Events.SaveEvent(ctx, ev); err != nil {
		return err
	}
	r.BroadcastEvent(ev)
	return nil
}

// ServeHTTP serves websocket, NIP-11 and NIP-86 requests.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("Content-Type") == "application/nostr+json+rpc" {
		r.serveNIP86(w, req)
		return
	}
	r.Relay.ServeHTTP(w, req)
}

// TrackConn is an http.Server ConnState hook: it remembers hijacked
// (websocket) connections, which http.Server.Shutdown does not close.
func (r *Relay) TrackConn(c net.Conn, state http.ConnState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch state {
	case http.StateHijacked:
		r.conns[c] = struct{}{}
	case http.StateClosed:
		delete(r.conns, c)
	}
}

// CloseClients sends every websocket client a close frame ("going away"),
// gives them until ctx ends to hang up, then closes what is left. khatru's
// own Shutdown only works for relays it started itself.
func (r *Relay) CloseClients(ctx context.Context) {
	msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "relay shutting down")
	r.mu.Lock()
	for ws := range r.clients {
		ws.WriteMessage(websocket.CloseMessage, msg)
	}
	r.mu.Unlock()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		r.mu.Lock()
		n := len(r.clients)
		r.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-t.C:
			continue
		}
		break
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

// Clients is the number of connected websocket clients.
func (r *Relay) Clients() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.clients)
}
