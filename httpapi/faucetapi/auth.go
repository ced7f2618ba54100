package faucetapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/faucet"
	"github.com/outpost-relay/outpost/httpapi"
	"github.com/outpost-relay/outpost/internal/nostr/nip98"
)

type sessionCtx struct{}

// newContextWithSession and sessionFromContext carry the caller's session.
func newContextWithSession(ctx context.Context, s faucet.Session) context.Context {
	return context.WithValue(ctx, sessionCtx{}, s)
}

func sessionFromContext(ctx context.Context) faucet.Session {
	s, _ := ctx.Value(sessionCtx{}).(faucet.Session)
	return s
}

// verifyNIP98 checks a "Nostr" Authorization header against this request.
// It reads the body (for the payload hash) and puts it back for the handler.
func verifyNIP98(v *nip98.Verifier, publicURL string, w http.ResponseWriter, r *http.Request) (string, error) {
	body, err := httpapi.ReadBody(w, r)
	if err != nil {
		return "", err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	u := publicURL + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	return v.Verify(r.Header.Get("Authorization"), nip98.Request{Method: r.Method, URLs: []string{u}, Body: body})
}

// requireUser admits "Authorization: Bearer <session token>" or a NIP-98
// header signed for this very request (a session of one request).
func requireUser(svc *faucet.Service, v *nip98.Verifier, publicURL string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
			h := r.Header.Get("Authorization")
			var sess faucet.Session
			switch {
			case strings.HasPrefix(h, "Bearer "):
				var err error
				if sess, err = svc.Session(r.Context(), strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))); err != nil {
					return err
				}
			case strings.HasPrefix(h, "Nostr "):
				pk, err := verifyNIP98(v, publicURL, w, r)
				if err != nil {
					return err
				}
				sess = faucet.Session{PubKey: pk, Method: faucet.LoginNIP98}
			default:
				return outpost.Errorf(outpost.Unauthorized, "unauthorized",
					"log in first: Authorization: Bearer <token from /auth/login>, or a NIP-98 header (Authorization: Nostr <base64 event>)").
					With("check", "header")
			}
			next.ServeHTTP(w, r.WithContext(newContextWithSession(r.Context(), sess)))
			return nil
		})
	}
}
