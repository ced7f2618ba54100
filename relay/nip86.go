package relay

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr/nip86"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
	"github.com/outpost-relay/outpost/internal/nostr/pubkey"
	"github.com/outpost-relay/outpost/internal/storage/kv"
	"github.com/outpost-relay/outpost/internal/storage/store"
	"github.com/tidwall/gjson"
)

// NIP-86 relay management is outpost's own: the request's NIP-98 header is
// checked once, by package nip98 (one ±60 s window, u, method, payload,
// replay), then the method runs through Moderation. (khatru's handler, which
// outpost never used, checks a narrower window after spending the token, and
// answers refusals with 200.)

// Moderation is what NIP-86 management does its work through (the ban
// list): each method is the NIP-86 method of its name; actor names the admin
// for the audit log. Audit records a change the relay makes itself (its
// NIP-11 fields) in the transaction that makes it.
type Moderation interface {
	BanPubKey(ctx context.Context, actor, pubkey, reason string) error
	UnbanPubKey(ctx context.Context, actor, pubkey string) error
	// ListBannedPubKeys gives each banned key to each in order, a page at a
	// time: the list may hold millions, and is never held whole.
	ListBannedPubKeys(ctx context.Context, each func(nip86.PubKeyReason) error) error
	AllowPubKey(ctx context.Context, actor, pubkey, reason string) error
	UnallowPubKey(ctx context.Context, actor, pubkey string) error
	ListAllowedPubKeys(ctx context.Context) ([]nip86.PubKeyReason, error)

	BanEvent(ctx context.Context, actor, id, reason string) error
	UnbanEvent(ctx context.Context, actor, id string) error
	AllowEvent(ctx context.Context, actor, id, reason string) error
	UnallowEvent(ctx context.Context, actor, id string) error
	ListBannedEvents(ctx context.Context) ([]nip86.IDReason, error)
	ListAllowedEvents(ctx context.Context) ([]nip86.IDReason, error)
	ListEventsNeedingModeration(ctx context.Context) ([]nip86.IDReason, error)

	AllowKind(ctx context.Context, actor string, kind int) error
	DisallowKind(ctx context.Context, actor string, kind int) error
	ListAllowedKinds(ctx context.Context) ([]int, error)
	ListDisallowedKinds(ctx context.Context) ([]int, error)

	BlockIP(ctx context.Context, actor, ip, reason string, confirmWide bool) error
	UnblockIP(ctx context.Context, actor, ip string) error
	ListBlockedIPs(ctx context.Context) ([]nip86.IPReason, error)

	Audit(txn *kv.Txn, actor, action, target string, before, after any) error
}

// management serves NIP-86.
type management struct {
	admins   map[string]bool
	verifier *nip98.Verifier
	svc      Moderation
	methods  map[string]method

	mu   sync.RWMutex
	info relayInfo // name, description and icon as changed over NIP-86
}

type relayInfo struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Icon        string `json:"icon,omitempty"`
}

var relayInfoKey = kv.Key(kv.PrefixRelay, 0x01)

const (
	maxNIP86Body     = 64 << 10
	nip86ContentType = "application/nostr+json+rpc"
	maxRelayName     = 100
	maxRelayDesc     = 2000
)

// method is one NIP-86 method: it reads its params and does its work.
type method func(ctx context.Context, actor string, p params) (any, error)

// EnableManagement serves NIP-86 to the given admins (hex pubkeys), doing
// the work through svc so every change is audited and enforced at once.
func (r *Relay) EnableManagement(svc Moderation, admins []string) error {
	m := &management{admins: map[string]bool{}, verifier: nip98.NewVerifier(nip98.DefaultWindow, nil, store.NewReplays(r.store.DB)), svc: svc}
	for _, a := range admins {
		m.admins[a] = true
	}
	if err := r.store.DB.View(func(txn *kv.Txn) error {
		_, err := kv.GetJSON(txn, relayInfoKey, &m.info)
		return err
	}); err != nil {
		return err
	}
	m.methods = map[string]method{
		"banpubkey":                   withPubKey(svc.BanPubKey),
		"unbanpubkey":                 withPubKey(dropReason(svc.UnbanPubKey)),
		"listbannedpubkeys":           stream(svc.ListBannedPubKeys),
		"allowpubkey":                 withPubKey(svc.AllowPubKey),
		"unallowpubkey":               withPubKey(dropReason(svc.UnallowPubKey)),
		"listallowedpubkeys":          list(svc.ListAllowedPubKeys),
		"banevent":                    withEventID(svc.BanEvent),
		"unbanevent":                  withEventID(dropReason(svc.UnbanEvent)),
		"allowevent":                  withEventID(svc.AllowEvent),
		"unallowevent":                withEventID(dropReason(svc.UnallowEvent)),
		"listbannedevents":            list(svc.ListBannedEvents),
		"listallowedevents":           list(svc.ListAllowedEvents),
		"listeventsneedingmoderation": list(svc.ListEventsNeedingModeration),
		"allowkind":                   withKind(svc.AllowKind),
		"disallowkind":                withKind(svc.DisallowKind),
		"listallowedkinds":            list(svc.ListAllowedKinds),
		"listdisallowedkinds":         list(svc.ListDisallowedKinds),
		"blockip":                     blockIP(svc.BlockIP),
		"unblockip":                   withIP(dropReason(svc.UnblockIP)),
		"listblockedips":              list(svc.ListBlockedIPs),
		"changerelayname":             r.changeInfo("name", maxRelayName, func(i *relayInfo) *string { return &i.Name }),
		"changerelaydescription":      r.changeInfo("description", maxRelayDesc, func(i *relayInfo) *string { return &i.Description }),
		"changerelayicon":             r.changeInfo("icon", 0, func(i *relayInfo) *string { return &i.Icon }),
	}
	supported := []string{"supportedmethods"}
	for name := range m.methods {
		supported = append(supported, name)
	}
	slices.Sort(supported)
	m.methods["supportedmethods"] = func(context.Context, string, params) (any, error) { return supported, nil }
	r.nip86 = m

	r.AddSupportedNIP(86)
	return nil
}

// changed is the relay's name, description and icon with what NIP-86
// changed of them.
func (m *management) changed(name, description, icon string) (string, string, string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return cmp.Or(m.info.Name, name), cmp.Or(m.info.Description, description), cmp.Or(m.info.Icon, icon)
}

// params are a request's parameters, read by position.
type params []json.RawMessage

func invalidParam(i int, format string, args ...any) error {
	return outpost.Errorf(outpost.Invalid, "invalid_params", format, args...).With("param", i)
}

// str is the string at i; optional ones may be missing or null.
func (p params) str(i int, optional bool) (string, error) {
	if i >= len(p) || string(p[i]) == "null" {
		if optional {
			return "", nil
		}
		return "", invalidParam(i, "parameter %d is missing", i+1)
	}
	var s string
	if err := json.Unmarshal(p[i], &s); err != nil {
		return "", invalidParam(i, "parameter %d must be a string", i+1)
	}
	return s, nil
}

// subjectAndReason reads [<subject>, <optional reason>].
func (p params) subjectAndReason() (string, string, error) {
	subject, err := p.str(0, false)
	if err != nil {
		return "", "", err
	}
	reason, err := p.str(1, true)
	return subject, strings.TrimSpace(reason), err
}

type change func(ctx context.Context, actor, subject, reason string) error

// dropReason adapts a removal, which takes no reason, to a change.
func dropReason(f func(ctx context.Context, actor, subject string) error) change {
	return func(ctx context.Context, actor, subject, _ string) error { return f(ctx, actor, subject) }
}

// withPubKey is a method on [<pubkey>, <optional reason>]; the key may be
// hex (as NIP-86 has it) or an npub.
func withPubKey(f change) method {
	return func(ctx context.Context, actor string, p params) (any, error) {
		s, reason, err := p.subjectAndReason()
		if err != nil {
			return nil, err
		}
		pk, err := pubkey.Parse(s)
		if err != nil {
			return nil, invalidParam(0, "%.80q is not a public key (64 hex characters or an npub)", s)
		}
		return true, f(ctx, actor, pk, reason)
	}
}

// withEventID is a method on [<event id>, <optional reason>].
func withEventID(f change) method {
	return func(ctx context.Context, actor string, p params) (any, error) {
		id, reason, err := p.subjectAndReason()
		if err != nil {
			return nil, err
		}
		if id = strings.ToLower(id); !isHex(id, 64) {
			return nil, invalidParam(0, "%.80q is not an event id (64 hex characters)", id)
		}
		return true, f(ctx, actor, id, reason)
	}
}

// ConfirmWide is blockip's third parameter that confirms a block wider than
// a /16 (IPv4) or /32 (IPv6): ["0.0.0.0/0", "reason", "confirm_wide"].
const ConfirmWide = "confirm_wide"

// blockIP is blockip: [<address or CIDR>, <optional reason>, <optional
// ConfirmWide>].
func blockIP(f func(ctx context.Context, actor, ip, reason string, confirmWide bool) error) method {
	return func(ctx context.Context, actor string, p params) (any, error) {
		ip, reason, err := p.subjectAndReason()
		if err != nil {
			return nil, err
		}
		confirm, err := p.str(2, true)
		if err != nil || (confirm != "" && confirm != ConfirmWide) {
			return nil, invalidParam(2, "parameter 3, when given, must be %q", ConfirmWide)
		}
		return true, f(ctx, actor, ip, reason, confirm == ConfirmWide)
	}
}

// withIP is a method on [<address or CIDR>, <optional reason>].
func withIP(f change) method {
	return func(ctx context.Context, actor string, p params) (any, error) {
		ip, reason, err := p.subjectAndReason()
		if err != nil {
			return nil, err
		}
		return true, f(ctx, actor, ip, reason)
	}
}

// withKind is a method on [<kind number>].
func withKind(f func(ctx context.Context, actor string, kind int) error) method {
	return func(ctx context.Context, actor string, p params) (any, error) {
		var kind int
		if len(p) == 0 || json.Unmarshal(p[0], &kind) != nil || kind < 0 || kind > 65535 {
			return nil, invalidParam(0, "parameter 1 must be a kind, a whole number from 0 to 65535")
		}
		return true, f(ctx, actor, kind)
	}
}

// list is a method without params that lists something.
func list[T any](f func(ctx context.Context) ([]T, error)) method {
	return func(ctx context.Context, _ string, _ params) (any, error) {
		out, err := f(ctx)
		if out == nil {
			out = []T{}
		}
		return out, err
	}
}

// streamed is a list result written as it is read (see writeStreamed).
type streamed func(ctx context.Context, write func(v any) error) error

// stream is a method whose list is written as f reads it.
func stream[T any](f func(ctx context.Context, each func(T) error) error) method {
	return func(context.Context, string, params) (any, error) {
		return streamed(func(ctx context.Context, write func(any) error) error {
			return f(ctx, func(v T) error { return write(v) })
		}), nil
	}
}

// streamWriteTimeout bounds each write of a streamed list: an admin's client
// that takes none of it for this long is cut off.
const streamWriteTimeout = 30 * time.Second

// writeStreamed answers {"result":[…]} with the elements as list reads them,
// through a 64 KiB buffer. An error once the answer has begun can only cut
// it short: the client sees JSON that does not end.
func writeStreamed(ctx context.Context, w http.ResponseWriter, list streamed) error {
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"result":[`)
	first := true
	err := list(ctx, func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		if bw.Available() < len(b) {
			rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		}
		_, err = bw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	bw.WriteString("]}\n")
	rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return bw.Flush()
}

// changeInfo is a method that sets one NIP-11 field ([<value>]): audited,
// persisted and served at once. An empty value goes back to the configured one.
func (r *Relay) changeInfo(field string, maxLen int, of func(*relayInfo) *string) method {
	return func(ctx context.Context, actor string, p params) (any, error) {
		v, err := p.str(0, false)
		if err != nil {
			return nil, err
		}
		v = strings.TrimSpace(v)
		if maxLen > 0 && utf8.RuneCountInString(v) > maxLen {
			return nil, invalidParam(0, "the %s is longer than %d characters", field, maxLen)
		}
		if field == "icon" && v != "" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return nil, invalidParam(0, "the icon must be an http(s) URL")
			}
		}
		m := r.nip86
		m.mu.Lock()
		defer m.mu.Unlock()
		next := m.info
		before := *of(&next)
		*of(&next) = v
		err = r.store.DB.Update(func(txn *kv.Txn) error {
			if err := kv.PutJSON(txn, relayInfoKey, next); err != nil {
				return err
			}
			return m.svc.Audit(txn, actor, "relay."+field, "relay", before, v)
		})
		if err != nil {
			return nil, err
		}
		m.info = next
		return true, nil
	}
}

// rpcReply is a NIP-86 answer: a result, or an error that starts with a
// code ("unauthorized: …", "invalid_params: …"), with the error's details.
type rpcReply struct {
	Result  any            `json:"result,omitempty"`
	Error   string         `json:"error,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// serveNIP86 answers a NIP-86 request: 401 for a missing or refused NIP-98
// header, 403 for a signer who is not an admin, the error's status for a
// call that fails, 200 with the result otherwise. Every answer is JSON.
func (r *Relay) serveNIP86(w http.ResponseWriter, req *http.Request) {
	reply := func(err error, result any) {
		if list, ok := result.(streamed); ok && err == nil {
			w.Header().Set("Content-Type", nip86ContentType)
			w.WriteHeader(http.StatusOK)
			if err := writeStreamed(req.Context(), w, list); err != nil {
				r.log.Warn("relay: NIP-86 list cut short", "err", err)
			}
			return
		}
		status, body := http.StatusOK, rpcReply{Result: result}
		if err != nil {
			e := outpost.AsError(err)
			if e == nil || e.Kind == outpost.Internal {
				r.log.Error("relay: NIP-86 call failed", "err", err)
				e = outpost.Errorf(outpost.Internal, "internal_error", "internal error")
			}
			status, body = httpapi.StatusOf(e), rpcReply{Error: e.Code + ": " + e.Message, Details: e.Details}
		}
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", "Nostr")
		}
		w.Header().Set("Content-Type", nip86ContentType)
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}
	m := r.nip86
	if m == nil {
		reply(outpost.Errorf(outpost.NotFound, "not_found", "relay management (NIP-86) is not enabled on this relay"), nil)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		w.Header().Set("Content-Type", nip86ContentType)
		w.WriteHeader(http.StatusMethodNotAllowed)
		json.NewEncoder(w).Encode(rpcReply{Error: "method_not_allowed: NIP-86 requests are POSTs"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxNIP86Body))
	if err != nil {
		reply(outpost.Errorf(outpost.TooLarge, "body_too_large", "a NIP-86 request is at most %d bytes", maxNIP86Body), nil)
		return
	}
	var call struct {
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	badCall := json.Unmarshal(body, &call)
	// NIP-86: the u tag is the relay's URL; its http(s) and ws(s) spellings
	// are the same URL, and clients use both.
	pk, err := m.verifier.Verify(req.Header.Get("Authorization"), nip98.Request{
		Method: http.MethodPost, URLs: []string{r.url, r.wsURL}, Body: body,
		Reusable: badCall == nil && readOnly(call.Method),
	})
	if err != nil {
		reply(err, nil)
		return
	}
	if !m.admins[pk] {
		reply(outpost.Errorf(outpost.Forbidden, "forbidden", "%s is not an admin of this relay", pubkey.NPub(pk)), nil)
		return
	}
	if badCall != nil {
		reply(outpost.Errorf(outpost.Invalid, "invalid_request", `the body must be {"method": "<name>", "params": [...]}`), nil)
		return
	}
	f, ok := m.methods[call.Method]
	if !ok {
		reply(outpost.Errorf(outpost.Invalid, "unsupported_method", "method %.80q is not supported (see supportedmethods)", call.Method), nil)
		return
	}
	result, err := f(req.Context(), "nip86:"+pubkey.NPub(pk), call.Params)
	if err != nil {
		result = nil
	}
	reply(err, result)
}

// readOnly tells the methods that change nothing; their NIP-98 events may
// be used again (nip98.Request.Reusable).
func readOnly(method string) bool {
	return method == "supportedmethods" || strings.HasPrefix(method, "list")
}

// isNIP86 tells a NIP-86 request by its content type (parameters allowed).
func isNIP86(req *http.Request) bool {
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return err == nil && mt == nip86ContentType
}

// PassBlocked tells the NIP-86 requests a blocked client IP must not stop:
// an admin listing or lifting blocks (unblockip, listblockedips,
// supportedmethods), so no block locks the admins out of undoing it. The
// signer is only looked at here; serveNIP86 checks the request in full.
func (r *Relay) PassBlocked(req *http.Request) bool {
	m := r.nip86
	if m == nil || req.Method != http.MethodPost || !isNIP86(req) {
		return false
	}
	if pk, err := nip98.Signer(req.Header.Get("Authorization")); err != nil || !m.admins[pk] {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxNIP86Body+1))
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), req.Body))
	if err != nil {
		return false
	}
	switch gjson.GetBytes(body, "method").String() {
	case "unblockip", "listblockedips", "supportedmethods":
		return true
	}
	return false
}
