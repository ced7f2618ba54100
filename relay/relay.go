// Package relay is outpost's Nostr relay: the websocket protocol (message
// parsing, the subscription registry and broadcaster, a writer per
// connection with a bounded queue, so that one slow client holds up no one
// and the limits below are enforced and advertised in NIP-11), one
// admission for every event (admission.go), NIP-09, NIP-42, NIP-45, NIP-77,
// the NIP-11 document and NIP-86 (nip86.go). NIP-40 expiry is
// events.SweepExpired's.
//
// It is not a khatru relay and embeds none: what a Relay exposes is what
// it honours. The services' hooks (RejectEvent, OnEventSaved) have khatru's
// signatures, so khatru policies (package policies among them) plug into
// either; the one admission runs them.
package relay

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/guard/ratelimit"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/outpost-relay/outpost/policies"
)

// Config configures the relay.
type Config struct {
	Store       *store.Store
	BanList     *policies.BanList
	Log         *slog.Logger
	PublicURL   string // http(s) base URL of this outpost
	ServicePub  string // hex: NIP-11 "self"
	OperatorPub string // hex: NIP-11 "pubkey", the operator's contact; may be empty
	Name        string
	Description string
	Contact     string
	Limits      *Limits // nil: DefaultLimits()
	// ClientIP says who a request comes from (the socket address, or
	// X-Forwarded-For from a trusted proxy); nil or "": the socket address.
	ClientIP func(*http.Request) string
	Observer Observer // told about every answer, for metrics; nil: nobody

	OutboxBytes  int           // bytes queued for one client before it is dropped; 0: 4 MiB
	WriteTimeout time.Duration // a write making no progress this long drops the client; 0: 10 s
	PingInterval time.Duration // how often clients are pinged; one silent for 2.5 times this is dropped; 0: 30 s
}

// Relay serves Nostr over websocket (and NIP-11, NIP-86). Its exported
// fields are the services' hooks: set them before it serves.
type Relay struct {
	// RejectEvent are the services' write policies (NIP-87, reports): every
	// event from a client or another relay that passed the relay's own
	// checks goes through them, in order, before it is stored; the first to
	// refuse gives the OK message ("blocked:" unless msg has a prefix). The
	// service's own events (Publish) skip them.
	RejectEvent []func(ctx context.Context, ev *nostr.Event) (reject bool, msg string)
	// OnEventSaved are told of each event from a client or another relay
	// that was stored: not of a duplicate, an older version of an address,
	// an ephemeral event, nor the service's own events.
	OnEventSaved []func(ctx context.Context, ev *nostr.Event)

	store    *store.Store
	events   EventReader
	banList  *policies.BanList
	log      *slog.Logger
	url      string // http(s)://host
	wsURL    string // ws(s)://host, for NIP-42
	self     string
	operator string
	limits   Limits
	clientIP func(*http.Request) string
	keys     keyCache // authors' parsed public keys, for signatures

	// banPolicies are the ban list's checks, which accept runs before
	// NIP-09 and the services' RejectEvent.
	banPolicies []func(context.Context, *nostr.Event) (bool, string)
	info        info // NIP-11

	upgrader     websocket.Upgrader
	subs         *registry
	heldValues   heldValues
	authorEvents *ratelimit.Limiter
	ipEvents     *ratelimit.Limiter
	outboxBytes  int
	writeTimeout time.Duration
	pingInterval time.Duration

	mu      sync.Mutex
	clients map[*conn]struct{}
	perIP   map[string]int
	conns   map[net.Conn]struct{} // hijacked websocket connections
	closing bool

	observer Observer
	counters counters

	nip86 *management // nil until EnableManagement
	gate  gate        // store calls in flight; closed at shutdown
	write writer      // every event stored goes through it (writer.go)
}

// New builds the relay.
func New(cfg Config) *Relay {
	limits := DefaultLimits()
	if cfg.Limits != nil {
		limits = *cfg.Limits
	}
	url := strings.TrimSuffix(cfg.PublicURL, "/")
	r := &Relay{store: cfg.Store, banList: cfg.BanList, log: cfg.Log, url: url,
		wsURL: "ws" + strings.TrimPrefix(url, "http"), self: cfg.ServicePub, operator: cfg.OperatorPub,
		limits: limits, clientIP: cfg.ClientIP,
		upgrader:     websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }},
		subs:         newRegistry(),
		heldValues:   heldValues{n: map[string]int{}},
		authorEvents: ratelimit.New(limits.EventsPerMinute, time.Minute, nil),
		ipEvents:     ratelimit.New(limits.IPEventsPerMinute, time.Minute, nil),
		outboxBytes:  cmp.Or(cfg.OutboxBytes, defaultOutboxBytes),
		writeTimeout: cmp.Or(cfg.WriteTimeout, defaultWriteTimeout),
		pingInterval: cmp.Or(cfg.PingInterval, defaultPingInterval),
		clients:      map[*conn]struct{}{}, perIP: map[string]int{}, conns: map[net.Conn]struct{}{}}
	if r.observer = cfg.Observer; r.observer == nil {
		r.observer = noObserver{}
	}
	r.events = gatedReader{g: &r.gate, er: cfg.Store.Events}
	r.write.store = cfg.Store.Events
	r.write.observer = r.observer
	if cfg.BanList != nil {
		cfg.BanList.WatchIPs(r.expelBlocked)
	}
	r.banPolicies = banPolicies(cfg.BanList)

	r.info = info{name: cfg.Name, description: cfg.Description, contact: cfg.Contact, nips: slices.Clone(servedNIPs)}
	return r
}

// ServeHTTP serves websocket, NIP-11 and NIP-86 requests.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case websocket.IsWebSocketUpgrade(req):
		r.serveWebsocket(w, req)
	case req.Header.Get("Accept") == "application/nostr+json":
		r.serveNIP11(w, req)
	case isNIP86(req):
		httpapi.CORS(http.HandlerFunc(r.serveNIP86)).ServeHTTP(w, req)
	case req.Header.Get("Upgrade") != "":
		http.Error(w, "not a websocket handshake", http.StatusBadRequest)
	default: // CORS preflights (for NIP-86 from browsers), and 404
		httpapi.CORS(http.HandlerFunc(httpapi.NotFound)).ServeHTTP(w, req)
	}
}

// serveWebsocket upgrades a connection within the per-IP limit and serves it.
func (r *Relay) serveWebsocket(w http.ResponseWriter, req *http.Request) {
	ip := ""
	if r.clientIP != nil {
		ip = r.clientIP(req)
	}
	if ip == "" {
		ip = remoteIP(req)
	}
	if status, msg := r.admit(ip); status != 0 {
		code := "unavailable"
		switch status {
		case http.StatusTooManyRequests:
			code = "rate_limit_exceeded"
			w.Header().Set("Retry-After", "60")
		case http.StatusForbidden:
			code = "ip_blocked"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"error": code, "message": msg})
		return
	}
	var c *conn
	defer r.leave(ip, &c)
	ws, err := r.upgrader.Upgrade(w, req, nil)
	if err != nil {
		return // the upgrader answered
	}
	// The kernel's own buffer for a client that does not read would grow
	// to megabytes; keep it to a fixed size, so the outbox bound is the bound.
	if tcp, ok := ws.NetConn().(interface{ SetWriteBuffer(int) error }); ok {
		tcp.SetWriteBuffer(socketSendBuffer)
	}
	c = newConn(r, ws, ip)
	r.mu.Lock()
	r.clients[c] = struct{}{}
	// A block made between admit and now found no client to expel.
	blocked := r.ipBlocked(ip)
	r.mu.Unlock()
	if blocked {
		c.expel()
	}
	c.serve()
}

// admit counts a new connection from ip, or says why it is refused.
func (r *Relay) admit(ip string) (status int, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return http.StatusServiceUnavailable, "the relay is shutting down"
	}
	if r.ipBlocked(ip) {
		return http.StatusForbidden, ipBlockedMessage
	}
	if max := r.limits.ConnectionsPerIP; max > 0 && r.perIP[ip] >= max {
		r.counters.connectionsRefused.Add(1)
		return http.StatusTooManyRequests, fmt.Sprintf("too many connections from your address (at most %d)", max)
	}
	r.perIP[ip]++
	return 0, ""
}

// ipBlockedMessage tells a client why its address is refused; the
// operator's reason for the block stays with the operator.
const ipBlockedMessage = "blocked: your address is blocked by this relay"

func (r *Relay) ipBlocked(ip string) bool {
	if r.banList == nil {
		return false
	}
	_, blocked := r.banList.IPBlocked(ip)
	return blocked
}

func (r *Relay) ipVersion() uint64 {
	if r.banList == nil {
		return 0
	}
	return r.banList.IPVersion()
}

// expelBlocked ends the connections of clients whose address was just
// blocked (the ban list calls it after every change of blocked addresses).
func (r *Relay) expelBlocked() {
	r.mu.Lock()
	var out []*conn
	for c := range r.clients {
		if r.ipBlocked(c.ip) {
			out = append(out, c)
		}
	}
	r.mu.Unlock()
	for _, c := range out {
		c.expel()
	}
}

// leave ends what admit began: the client (if it got that far) leaves the
// list and its address's count in one step, so a client no longer listed
// no longer counts against its address either.
func (r *Relay) leave(ip string, c **conn) {
	r.mu.Lock()
	if *c != nil {
		delete(r.clients, *c)
	}
	if r.perIP[ip]--; r.perIP[ip] <= 0 {
		delete(r.perIP, ip)
	}
	r.mu.Unlock()
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
// gives them until ctx ends (a second at most) to hang up, closes what is
// left, and waits for store calls in flight; later ones fail, so the store
// can close safely.
func (r *Relay) CloseClients(ctx context.Context) {
	r.mu.Lock()
	r.closing = true
	for c := range r.clients {
		c.out.shut(closePayload(websocket.CloseGoingAway, "relay shutting down"))
	}
	r.mu.Unlock()
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
	for c := range r.clients {
		c.drop("the relay is shutting down")
	}
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

// Stats reads the relay's figures; it takes three locks briefly.
func (r *Relay) Stats() Stats {
	return Stats{Clients: r.Clients(), Subscriptions: r.subs.len(), FilterValues: r.heldValues.total(),
		ConnectionsRefused: r.counters.connectionsRefused.Load(), SubscriptionsRefused: r.counters.subscriptionsRefused.Load(),
		FilterValuesRefused: r.counters.filterValuesRefused.Load(),
		IPEventsRefused:     r.ipEvents.Refused(), AuthorEventsRefused: r.authorEvents.Refused()}
}
