// Package nip98 verifies NIP-98 HTTP auth: an "Authorization: Nostr <base64
// kind-27235 event>" header that signs the URL, method and body hash of one
// request. Every failure is an outpost.Error naming the check that failed.
package nip98

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost"
)

// Kind is the NIP-98 event kind.
const Kind = 27235

// DefaultWindow is how far created_at may be from now.
const DefaultWindow = 60 * time.Second

// maxHeaderLen caps the header we try to decode.
const maxHeaderLen = 16 << 10

// Verifier checks NIP-98 headers.
type Verifier struct {
	Window time.Duration    // default DefaultWindow
	Now    func() time.Time // default time.Now
	replay Replays
}

// Replays remembers the event ids already used. Use marks id used until
// until and reports true, or reports false when it was used before and its
// mark has not expired at now.
type Replays interface {
	Use(id string, now, until time.Time) (bool, error)
}

// NewVerifier returns a verifier that accepts an event id once, remembering
// used ids in replays, or in memory when replays is nil. Memory forgets at a
// restart, when an event may still be inside its window: a server keeps
// them where they survive one (store.Replays).
func NewVerifier(window time.Duration, now func() time.Time, replays Replays) *Verifier {
	if window <= 0 {
		window = DefaultWindow
	}
	if now == nil {
		now = time.Now
	}
	if replays == nil {
		replays = &replayCache{seen: map[string]time.Time{}}
	}
	return &Verifier{Window: window, Now: now, replay: replays}
}

// Request is what the signed event must describe.
type Request struct {
	Method string
	URLs   []string // acceptable values of the u tag (e.g. public URL + path + query)
	Body   []byte   // nil or empty: no body
	// Reusable exempts a request that changes nothing (a read) from the
	// one-use rule: the same request twice in one second is the same event
	// (clients such as nostr-tools add no nonce), and a replay of it can
	// only read again what its signer read.
	Reusable bool
}

func fail(check, format string, args ...any) *outpost.Error {
	return outpost.Errorf(outpost.Unauthorized, "unauthorized", "NIP-98: "+format, args...).With("check", check)
}

// Verify checks header against req and returns the signer's pubkey (hex).
// The checks run in a fixed order; a failure names its check.
func (v *Verifier) Verify(header string, req Request) (string, error) {
	ev, err := decode(header)
	if err != nil {
		return "", err
	}
	now := v.Now()
	if err := v.checkRequest(ev, req, now); err != nil {
		return "", err
	}
	if !req.Reusable {
		// The event passes the time check until created_at+Window, which
		// is at most now+2*Window.
		fresh, err := v.replay.Use(ev.ID, now, now.Add(2*v.Window))
		if err != nil {
			return "", err
		}
		if !fresh {
			return "", fail("replay", "this authorization event was already used")
		}
	}
	return ev.PubKey, nil
}

// Signer is the pubkey (hex) of the validly signed kind-27235 event in
// header, checked against no request and not spent: a first look, for a gate
// that lets an admin's request on to where Verify decides.
func Signer(header string) (string, error) {
	ev, err := decode(header)
	if err != nil {
		return "", err
	}
	return ev.PubKey, nil
}

// decode reads the header's event and checks it is a signed kind-27235 event.
func decode(header string) (*nostr.Event, error) {
	token, ok := strings.CutPrefix(header, "Nostr ")
	if !ok || token == "" {
		return nil, fail("header", "expected an Authorization header of the form \"Nostr <base64 event>\"")
	}
	if len(token) > maxHeaderLen {
		return nil, fail("header", "authorization event too large")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token))
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(token)); err != nil {
			return nil, fail("base64", "the authorization event is not valid base64")
		}
	}
	var ev nostr.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fail("json", "the authorization event is not valid JSON")
	}
	if ev.Kind != Kind {
		return nil, fail("kind", "the authorization event must be kind %d, got %d", Kind, ev.Kind)
	}
	if !ev.CheckID() {
		return nil, fail("id", "the authorization event id does not match its content")
	}
	if ok, _ := ev.CheckSignature(); !ok {
		return nil, fail("signature", "the authorization event signature is invalid")
	}
	return &ev, nil
}

// checkRequest checks that ev describes req, now.
func (v *Verifier) checkRequest(ev *nostr.Event, req Request, now time.Time) error {
	created := time.Unix(int64(ev.CreatedAt), 0)
	if d := now.Sub(created); d > v.Window || d < -v.Window {
		return fail("created_at", "created_at must be within %d seconds of the server time", int(v.Window.Seconds()))
	}
	u, ok := only(ev.Tags, "u")
	if !ok || !urlMatches(u, req.URLs) {
		return fail("u", "the event must have exactly one u tag, the exact URL of this request").With("expected_u", first(req.URLs))
	}
	// NIP-98 names the method as HTTP does; "post" is not POST (RFC 9110
	// §9.1: methods are case-sensitive).
	if m, ok := only(ev.Tags, "method"); !ok || m != req.Method {
		return fail("method", "the event must have exactly one method tag, %s", req.Method)
	}
	if len(req.Body) > 0 || countTags(ev.Tags, "payload") > 0 {
		sum := sha256.Sum256(req.Body)
		if p, ok := only(ev.Tags, "payload"); !ok || !strings.EqualFold(p, hex.EncodeToString(sum[:])) {
			return fail("payload", "the event must have one payload tag, the sha256 of the request body")
		}
	}
	return nil
}

// only is the value of the one tag called name; ok is false when there is
// none, more than one, or it has no value. A second u or method tag would
// otherwise let one event say two things.
func only(tags nostr.Tags, name string) (value string, ok bool) {
	if countTags(tags, name) != 1 {
		return "", false
	}
	for _, t := range tags {
		if len(t) >= 2 && t[0] == name {
			return t[1], true
		}
	}
	return "", false
}

func countTags(tags nostr.Tags, name string) int {
	n := 0
	for _, t := range tags {
		if len(t) >= 1 && t[0] == name {
			n++
		}
	}
	return n
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// urlMatches compares scheme and host case-insensitively, path and query exactly.
func urlMatches(got string, want []string) bool {
	g, err := url.Parse(got)
	if err != nil {
		return false
	}
	for _, w := range want {
		wu, err := url.Parse(w)
		if err != nil {
			continue
		}
		if strings.EqualFold(g.Scheme, wu.Scheme) && strings.EqualFold(g.Host, wu.Host) &&
			strings.TrimSuffix(g.Path, "/") == strings.TrimSuffix(wu.Path, "/") && g.RawQuery == wu.RawQuery {
			return true
		}
	}
	return false
}

// replayCache remembers event ids until they could no longer pass the time check.
type replayCache struct {
	mu   sync.Mutex
	seen map[string]time.Time
	adds int
}

func (c *replayCache) Use(id string, now, until time.Time) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.seen[id]; ok && now.Before(exp) {
		return false, nil
	}
	c.seen[id] = until
	if c.adds++; c.adds%1024 == 0 {
		for k, exp := range c.seen {
			if now.After(exp) {
				delete(c.seen, k)
			}
		}
	}
	return true, nil
}

// Sign makes an Authorization header value for a request; used by the
// "outpost nip98 sign" helper and by tests.
func Sign(secretKey, method, url string, body []byte, at time.Time) (string, error) {
	ev := nostr.Event{Kind: Kind, CreatedAt: nostr.Timestamp(at.Unix()), Tags: nostr.Tags{{"u", url}, {"method", method}}}
	if len(body) > 0 {
		sum := sha256.Sum256(body)
		ev.Tags = append(ev.Tags, nostr.Tag{"payload", hex.EncodeToString(sum[:])})
	}
	if err := ev.Sign(secretKey); err != nil {
		return "", err
	}
	b, _ := json.Marshal(ev)
	return "Nostr " + base64.StdEncoding.EncodeToString(b), nil
}
