package banlistapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
)

// The admin API's moderation lists, the operations NIP-86 has: the allow
// list of keys, kind rules, blocked addresses and event moderation. Each
// change answers {"status": <what was done>, <record>: {...}}.

// change decodes a Q, does it, and answers with status and what do returned.
func change[Q any, V any](status, key string, do func(r *http.Request, q Q) (V, error)) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		q, err := httpapi.Decode[Q](w, r)
		if err != nil {
			return err
		}
		v, err := do(r, q)
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{"status": status, key: v})
	})
}

// listing answers {key: [...]}.
func listing[V any](key string, list func(ctx context.Context) ([]V, error)) http.HandlerFunc {
	return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
		out, err := list(r.Context())
		if err != nil {
			return err
		}
		return httpapi.Encode(w, http.StatusOK, map[string]any{key: out})
	})
}

// --- the allow list ---

type allowedView struct {
	PubKey    string `json:"pubkey"`
	PubKeyHex string `json:"pubkey_hex"`
	Reason    string `json:"reason"`
	AddedAt   int64  `json:"added_at"`
	AddedBy   string `json:"added_by"`
}

func viewAllowed(a banlist.AllowedPubKey) allowedView {
	return allowedView{PubKey: pubkey.NPub(a.PubKey), PubKeyHex: a.PubKey, Reason: a.Reason, AddedAt: a.AddedAt, AddedBy: a.AddedBy}
}

type pubkeyRequest struct {
	PubKey string `json:"pubkey"`
	Reason string `json:"reason"`
	pk     string
}

func (q *pubkeyRequest) Valid() (err error) {
	q.Reason = strings.TrimSpace(q.Reason)
	q.pk, err = parsePubKey(q.PubKey, "pubkey")
	return err
}

func allowedPubKeys(svc *banlist.Service) func(context.Context) ([]allowedView, error) {
	return func(ctx context.Context) ([]allowedView, error) {
		keys, err := svc.AllowedPubKeys(ctx)
		out := make([]allowedView, len(keys))
		for i, k := range keys {
			out[i] = viewAllowed(k)
		}
		return out, err
	}
}

func handleAllow(svc *banlist.Service) http.HandlerFunc {
	return change("allowed", "entry", func(r *http.Request, q pubkeyRequest) (allowedView, error) {
		a, err := svc.AllowPubKey(r.Context(), actor(r), q.pk, q.Reason)
		return viewAllowed(a), err
	})
}

func handleUnallow(svc *banlist.Service) http.HandlerFunc {
	return change("unallowed", "entry", func(r *http.Request, q pubkeyRequest) (allowedView, error) {
		a, err := svc.UnallowPubKey(r.Context(), actor(r), q.pk)
		return viewAllowed(a), err
	})
}

// --- kinds ---

type kindRequest struct {
	Kind *int `json:"kind"`
}

func (q *kindRequest) Valid() error {
	if q.Kind == nil {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "kind is required").With("field", "kind")
	}
	return nil
}

func handleKind(status string, do func(*banlist.Service, context.Context, string, int) (banlist.KindRule, error), svc *banlist.Service) http.HandlerFunc {
	return change(status, "kind", func(r *http.Request, q kindRequest) (banlist.KindRule, error) {
		return do(svc, r.Context(), actor(r), *q.Kind)
	})
}

// --- blocked addresses ---

type ipRequest struct {
	IP          string `json:"ip"`
	Reason      string `json:"reason"`
	ConfirmWide bool   `json:"confirm_wide"` // needed for a wide block (banlist.WideBlock)
}

func (q *ipRequest) Valid() error {
	q.Reason = strings.TrimSpace(q.Reason)
	if strings.TrimSpace(q.IP) == "" {
		return outpost.Errorf(outpost.Invalid, "invalid_request", "ip is required").With("field", "ip")
	}
	return nil
}

func handleBlockIP(svc *banlist.Service) http.HandlerFunc {
	return change("blocked", "ip", func(r *http.Request, q ipRequest) (banlist.BlockedIP, error) {
		if k, _ := keyFromContext(r.Context()); banlist.WideBlock(q.IP) && !k.Role.Includes(banlist.RoleAdmin) {
			return banlist.BlockedIP{}, outpost.Errorf(outpost.Forbidden, "forbidden",
				"only an admin key may block a range wider than a /%d (IPv4) or /%d (IPv6)", banlist.WideIPv4Bits, banlist.WideIPv6Bits)
		}
		return svc.BlockIP(r.Context(), actor(r), q.IP, q.Reason, q.ConfirmWide)
	})
}

func handleUnblockIP(svc *banlist.Service) http.HandlerFunc {
	return change("unblocked", "ip", func(r *http.Request, q ipRequest) (banlist.BlockedIP, error) {
		return svc.UnblockIP(r.Context(), actor(r), q.IP)
	})
}

// --- events ---

type eventRequest struct {
	EventID string `json:"event_id"`
	Reason  string `json:"reason"`
}

func (q *eventRequest) Valid() (err error) {
	q.Reason = strings.TrimSpace(q.Reason)
	q.EventID, err = banlist.ParseEventID(q.EventID)
	return err
}

func handleEvent[V any](status string, do func(svc *banlist.Service, ctx context.Context, actor, id, reason string) (V, error), svc *banlist.Service) http.HandlerFunc {
	return change(status, "event", func(r *http.Request, q eventRequest) (V, error) {
		return do(svc, r.Context(), actor(r), q.EventID, q.Reason)
	})
}

// dropReason adapts a removal, which takes no reason.
func dropReason[V any](f func(*banlist.Service, context.Context, string, string) (V, error)) func(*banlist.Service, context.Context, string, string, string) (V, error) {
	return func(svc *banlist.Service, ctx context.Context, actor, id, _ string) (V, error) {
		return f(svc, ctx, actor, id)
	}
}
