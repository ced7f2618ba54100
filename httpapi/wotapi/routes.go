// Package wotapi is the web of trust's REST API: GET /wot/{npub}, a key's
// standing (package wot), for clients and other services to use.
package wotapi

import (
	"context"
	_ "embed"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/wot"
)

//go:embed openapi.json
var openAPI []byte

// Config is what Routes takes.
type Config struct {
	WoT *wot.WoT
	Log *slog.Logger
}

// Routes returns the web of trust's router; every route of the service is here.
func Routes(cfg Config) http.Handler {
	r := chi.NewRouter()
	r.Use(httpapi.Logger(cfg.Log))
	r.NotFound(httpapi.NotFound)
	r.MethodNotAllowed(httpapi.MethodNotAllowed)
	r.Use(httpapi.CORS)
	r.Get("/health", httpapi.ServeHealth(Health(cfg.WoT)))
	r.Get("/{npub}", handleStanding(cfg.WoT))
	return r
}

// HealthChecks are what the web of trust's health reports.
type HealthChecks struct {
	Enabled bool `json:"enabled"`
	Lists   int  `json:"lists"`
	Members int  `json:"members"`
	Keys    int  `json:"keys"`    // keys with an id in the graph
	Follows int  `json:"follows"` // follows held, all lists together
	Full    bool `json:"full"`    // the graph's bound left the farthest members' lists out
}

// Health reports the web of trust: never down, as it computes in memory
// what the store gave it; degraded while its graph is full, which leaves
// the outer ring of the walk short of lists.
func Health(w *wot.WoT) func(context.Context) outpost.Health[HealthChecks] {
	return func(context.Context) outpost.Health[HealthChecks] {
		keys, follows, full := w.Size()
		h := outpost.NewHealth(outpost.Version, HealthChecks{Enabled: w.Enabled(), Lists: w.Lists(), Members: w.Members(), Keys: keys, Follows: follows, Full: full})
		if full {
			h.Fail(outpost.HealthDegraded, "the graph is full: the farthest members' contact lists are left out")
		}
		return h
	}
}

// standing is GET /{npub}.
type standing struct {
	PubKey    string  `json:"pubkey"`
	NPub      string  `json:"npub"`
	Enabled   bool    `json:"enabled"`
	Hops      int     `json:"hops"`
	Followers int     `json:"followers"`
	Rank      float64 `json:"rank"`
	Weight    float64 `json:"weight"`
	Member    bool    `json:"member"`
	FirstSeen *int64  `json:"first_seen_at"`
}

func handleStanding(w *wot.WoT) http.HandlerFunc {
	return httpapi.Handle(func(rw http.ResponseWriter, r *http.Request) error {
		pk, err := pubkey.Parse(chi.URLParam(r, "npub"))
		if err != nil {
			return outpost.Errorf(outpost.Invalid, "invalid_pubkey", "not a npub or a hex public key").With("field", "npub")
		}
		st := w.StandingOf(pk)
		out := standing{PubKey: pk, NPub: pubkey.NPub(pk), Enabled: w.Enabled(), Hops: st.Hops, Followers: st.Followers,
			Rank: st.Rank, Weight: w.Weight(pk), Member: st.Member}
		if st.FirstSeen == 0 {
			k, _ := wot.ParseKey(pk)
			if at, found, err := w.FirstSeen(k); err != nil {
				return err
			} else if found {
				st.FirstSeen = at.Unix()
			}
		}
		if st.FirstSeen != 0 {
			out.FirstSeen = &st.FirstSeen
		}
		return httpapi.Encode(rw, http.StatusOK, out)
	})
}
