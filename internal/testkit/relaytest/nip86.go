package relaytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip86"
)

// Admin is a NIP-86 client that builds its requests as nak's "admin"
// command does: a POST of go-nostr's nip86.Request to the relay's http(s)
// URL, with a NIP-98 header whose u tag is that URL, method POST and the
// payload's sha256. Sign may change the auth event before it is signed.
type Admin struct {
	URL       string // the relay's http:// or ws:// URL
	SecretKey string
	// Sign, if set, adjusts the auth event (its tags, created_at, kind)
	// before it is signed; it may also replace the key that signs it.
	Sign func(ev *nostr.Event) (secretKey string)
}

// Reply is what the relay answered.
type Reply struct {
	Status int
	nip86.Response
	Raw []byte
}

// Call sends one request and reads the answer; only transport errors fail it.
func (a Admin) Call(method string, params ...any) (Reply, error) {
	body := requestBody(method, params)
	auth, err := a.Header(body)
	if err != nil {
		return Reply{}, err
	}
	return a.Send(body, auth)
}

func requestBody(method string, params []any) []byte {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(nip86.Request{Method: method, Params: params})
	return body
}

// Header is the Authorization header for body.
func (a Admin) Header(body []byte) (string, error) {
	ev, sk := a.authEvent(body)
	if err := ev.Sign(sk); err != nil {
		return "", err
	}
	j, _ := json.Marshal(ev)
	return "Nostr " + base64.StdEncoding.EncodeToString(j), nil
}

// EventID is the id of the auth event Call would send now for method and
// params: a relay refuses the same id twice as a replay, and it changes
// only with the second (created_at).
func (a Admin) EventID(method string, params ...any) string {
	ev, sk := a.authEvent(requestBody(method, params))
	ev.PubKey, _ = nostr.GetPublicKey(sk)
	return ev.GetID()
}

// authEvent is the unsigned auth event for body and the key to sign it with.
func (a Admin) authEvent(body []byte) (nostr.Event, string) {
	url := "http" + strings.TrimPrefix(nostr.NormalizeURL(a.URL), "ws")
	sum := sha256.Sum256(body)
	ev := nostr.Event{Kind: 27235, CreatedAt: nostr.Now(), Content: "",
		Tags: nostr.Tags{{"u", url}, {"method", "POST"}, {"payload", hex.EncodeToString(sum[:])}}}
	sk := a.SecretKey
	if a.Sign != nil {
		if other := a.Sign(&ev); other != "" {
			sk = other
		}
	}
	return ev, sk
}

// Send posts body with the given Authorization header ("" for none).
func (a Admin) Send(body []byte, auth string) (Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "http" + strings.TrimPrefix(nostr.NormalizeURL(a.URL), "ws")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Content-Type", "application/nostr+json+rpc")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return Reply{}, err
	}
	r := Reply{Status: resp.StatusCode, Raw: raw}
	if err := json.Unmarshal(raw, &r.Response); err != nil {
		return r, fmt.Errorf("%d %q is not a NIP-86 response: %w", resp.StatusCode, raw, err)
	}
	return r, nil
}
