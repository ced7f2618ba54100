package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr/nip11"
	"github.com/nbd-wtf/go-nostr/nip86"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/nip98"
	"github.com/outpost-relay/outpost/pubkey"
	"github.com/outpost-relay/outpost/store"
)

// management is NIP-86 relay management, backed by the ban-list service.
type management struct {
	admins   map[string]bool
	verifier *nip98.Verifier

	mu   sync.RWMutex
	info relayInfo // name, description and icon as changed over NIP-86
}

type relayInfo struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Icon        string `json:"icon,omitempty"`
}

var relayInfoKey = store.Key(store.PrefixRelay, 0x01)

const maxNIP86Body = 64 << 10

// Moderation is what NIP-86 management does its work through (the ban
// list): each method is the NIP-86 method of its name; actor names the
// admin for the audit log.
type Moderation interface {
	BanPubKey(ctx context.Context, actor, pubkey, reason string) error
	AllowPubKey(ctx context.Context, actor, pubkey string) error
	ListBannedPubKeys(ctx context.Context) ([]nip86.PubKeyReason, error)
	ListEventsNeedingModeration(ctx context.Context) ([]nip86.IDReason, error)
	BanEvent(ctx context.Context, actor, id, reason string) error
	AllowEvent(ctx context.Context, actor, id string) error
	ListBannedEvents(ctx context.Context) ([]nip86.IDReason, error)
}

// EnableManagement serves NIP-86 to the given admins (hex pubkeys), applying
// bans and event removals through svc so they are audited and enforced at once.
func (r *Relay) EnableManagement(svc Moderation, admins []string) error {
	m := &management{admins: map[string]bool{}, verifier: nip98.NewVerifier(0, nil)}
	for _, a := range admins {
		m.admins[a] = true
	}
	if err := r.store.DB.View(func(txn *badger.Txn) error {
		_, err := store.GetJSON(txn, relayInfoKey, &m.info)
		return err
	}); err != nil {
		return err
	}
	r.nip86 = m
	actor := func(ctx context.Context) string { return "nip86:" + pubkey.NPub(khatru.GetAuthed(ctx)) }

	api := &r.Relay.ManagementAPI
	api.RejectAPICall = append(api.RejectAPICall, func(ctx context.Context, _ nip86.MethodParams) (bool, string) {
		if !m.admins[khatru.GetAuthed(ctx)] {
			return true, "restricted: not a relay admin"
		}
		return false, ""
	})
	api.BanPubKey = func(ctx context.Context, pk, reason string) error {
		return clientError(svc.BanPubKey(ctx, actor(ctx), pk, reason))
	}
	api.AllowPubKey = func(ctx context.Context, pk, _ string) error {
		return clientError(svc.AllowPubKey(ctx, actor(ctx), pk))
	}
	api.ListBannedPubKeys = func(ctx context.Context) ([]nip86.PubKeyReason, error) {
		out, err := svc.ListBannedPubKeys(ctx)
		return out, clientError(err)
	}
	api.ListEventsNeedingModeration = func(ctx context.Context) ([]nip86.IDReason, error) {
		out, err := svc.ListEventsNeedingModeration(ctx)
		return out, clientError(err)
	}
	api.BanEvent = func(ctx context.Context, id, reason string) error {
		return clientError(svc.BanEvent(ctx, actor(ctx), id, reason))
	}
	api.AllowEvent = func(ctx context.Context, id, _ string) error {
		return clientError(svc.AllowEvent(ctx, actor(ctx), id))
	}
	api.ListBannedEvents = func(ctx context.Context) ([]nip86.IDReason, error) {
		out, err := svc.ListBannedEvents(ctx)
		return out, clientError(err)
	}
	api.ChangeRelayName = func(ctx context.Context, v string) error {
		return r.changeInfo(func(i *relayInfo) { i.Name = v })
	}
	api.ChangeRelayDescription = func(ctx context.Context, v string) error {
		return r.changeInfo(func(i *relayInfo) { i.Description = v })
	}
	api.ChangeRelayIcon = func(ctx context.Context, v string) error {
		return r.changeInfo(func(i *relayInfo) { i.Icon = v })
	}
	r.Relay.OverwriteRelayInformation = append(r.Relay.OverwriteRelayInformation,
		func(_ context.Context, _ *http.Request, info nip11.RelayInformationDocument) nip11.RelayInformationDocument {
			m.mu.RLock()
			defer m.mu.RUnlock()
			if m.info.Name != "" {
				info.Name = m.info.Name
			}
			if m.info.Description != "" {
				info.Description = m.info.Description
			}
			if m.info.Icon != "" {
				info.Icon = m.info.Icon
			}
			return info
		})
	r.Info.AddSupportedNIP(86)
	return nil
}

func (r *Relay) changeInfo(change func(*relayInfo)) error {
	m := r.nip86
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.info
	change(&next)
	if err := store.Update(r.store.DB, func(txn *badger.Txn) error { return store.PutJSON(txn, relayInfoKey, next) }); err != nil {
		return err
	}
	m.info = next
	return nil
}

// clientError keeps internal causes out of NIP-86 answers.
func clientError(err error) error {
	if err == nil {
		return nil
	}
	if e := outpost.AsError(err); e != nil && e.Kind != outpost.Internal {
		return e
	}
	return outpost.Errorf(outpost.Internal, "internal", "internal error")
}

// serveNIP86 checks what khatru's handler does not (event kind, method, a
// two-sided time window, replays, and that the signer is an admin) before
// handing the request to it.
func (r *Relay) serveNIP86(w http.ResponseWriter, req *http.Request) {
	reply := func(status int, msg string) {
		w.Header().Set("Content-Type", "application/nostr+json+rpc")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(nip86.Response{Error: msg})
	}
	m := r.nip86
	if m == nil {
		reply(http.StatusNotFound, "relay management is not enabled")
		return
	}
	if req.Method != http.MethodPost {
		reply(http.StatusMethodNotAllowed, "NIP-86 requests are POSTs")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxNIP86Body))
	if err != nil {
		reply(http.StatusRequestEntityTooLarge, "request too large")
		return
	}
	ws := "ws" + strings.TrimPrefix(r.url, "http")
	pk, err := m.verifier.Verify(req.Header.Get("Authorization"), nip98.Request{
		Method: http.MethodPost, URLs: []string{r.url, r.url + "/", ws, ws + "/"}, Body: body,
	})
	if err != nil {
		reply(http.StatusUnauthorized, "unauthorized: "+outpost.AsError(err).Message)
		return
	}
	if !m.admins[pk] {
		reply(http.StatusForbidden, "restricted: not a relay admin")
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.Relay.ServeHTTP(w, req)
}
