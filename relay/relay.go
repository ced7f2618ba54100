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
	"github.com/nbd-wtf/go-nostr/nip40"
	"github.com/outpost-relay/outpost"
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

// Limits of one REQ filter, advertised in NIP-11: a filter without a limit
// gets defaultLimit events, one asking for more than maxLimit gets maxLimit.
const (
	defaultLimit = 250
	maxLimit     = 1000
)

// clampLimit applies defaultLimit and maxLimit; the store itself has no limit.
func clampLimit(f nostr.Filter) nostr.Filter {
	if f.Limit <= 0 {
		f.Limit = defaultLimit
	}
	f.Limit = min(f.Limit, maxLimit)
	return f
}

// maxFuture is how far in the future created_at may be. Events beyond it
// would also hide from queries that start at "now".
const maxFuture = 15 * time.Minute

// rejectExpired refuses events whose NIP-40 expiration has passed.
func rejectExpired(_ context.Context, ev *nostr.Event) (bool, string) {
	if exp := nip40.GetExpiration(ev.Tags); exp != -1 && exp <= nostr.Now() {
		return true, "invalid: this event has expired"
	}
	return false, ""
}

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
	gate  gate        // store calls in flight; closed at shutdown
}

// New builds the relay.
func New(cfg Config) *Relay {
	rl := khatru.NewRelay()
	r := &Relay{Relay: rl, store: cfg.Store, log: cfg.Log, url: strings.TrimSuffix(cfg.PublicURL, "/"),
		clients: map[*khatru.WebSocket]struct{}{}, conns: map[net.Conn]struct{}{}}
	rl.Log = slog.NewLogLogger(cfg.Log.With("component", "khatru").Handler(), slog.LevelWarn)
	rl.ServiceURL = r.url

	ev := cfg.Store.Events
	rl.StoreEvent = append(rl.StoreEvent, gated(&r.gate, ev.SaveEvent))
	rl.DeleteEvent = append(rl.DeleteEvent, gated(&r.gate, ev.DeleteEvent))
	rl.ReplaceEvent = append(rl.ReplaceEvent, gated(&r.gate, ev.ReplaceEvent))
	rl.QueryEvents = append(rl.QueryEvents, gatedQuery(&r.gate, func(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
		return ev.QueryEvents(ctx, clampLimit(f))
	}))
	rl.CountEvents = append(rl.CountEvents, func(ctx context.Context, f nostr.Filter) (int64, error) {
		if !r.gate.enter() {
			return 0, errShuttingDown
		}
		defer r.gate.exit()
		return ev.CountEvents(ctx, f)
	})

	rl.RejectEvent = append(rl.RejectEvent,
		kpolicies.PreventTimestampsInTheFuture(maxFuture),
		rejectExpired,
		kpolicies.PreventLargeTags(1024),
	)
	rl.RejectEvent = append(rl.RejectEvent, banPolicies(cfg.BanList)...)
	rl.RejectEvent = append(rl.RejectEvent, r.rejectDeleted)

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
		MaxLimit:            maxLimit,
		DefaultLimit:        defaultLimit,
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
	if !r.gate.enter() {
		return errShuttingDown
	}
	defer r.gate.exit()
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
// gives them until ctx ends to hang up, closes what is left, and waits for
// store calls in flight; later ones fail, so the store can close safely.
// khatru's own Shutdown only works for relays it started itself.
func (r *Relay) CloseClients(ctx context.Context) {
	msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "relay shutting down")
	r.mu.Lock()
	for ws := range r.clients {
		ws.WriteMessage(websocket.CloseMessage, msg)
	}
	r.mu.Unlock()
	// Well-behaved clients answer the close frame at once; don't let the
	// others hold shutdown longer than a moment.
	grace, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for r.Clients() > 0 && grace.Err() == nil {
		select {
		case <-grace.Done():
		case <-t.C:
		}
	}
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
	r.mu.Unlock()
	r.gate.close(ctx)
}

// Clients is the number of connected websocket clients.
func (r *Relay) Clients() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.clients)
}
