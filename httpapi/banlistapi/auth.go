package banlistapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/banlist"
	"github.com/outpost-relay/outpost/httpapi"
)

type keyCtx struct{}

// newContextWithKey and keyFromContext carry the authenticated API key.
func newContextWithKey(ctx context.Context, k banlist.APIKey) context.Context {
	return context.WithValue(ctx, keyCtx{}, k)
}

func keyFromContext(ctx context.Context) (banlist.APIKey, bool) {
	k, ok := ctx.Value(keyCtx{}).(banlist.APIKey)
	return k, ok
}

// actor names the caller in bans and the audit log.
func actor(r *http.Request) string {
	if k, ok := keyFromContext(r.Context()); ok {
		return k.Actor()
	}
	return "anonymous"
}

// requireRole admits requests with "Authorization: Bearer <key>" of at least
// role: no or an unknown key is 401, a key with a lower role 403.
func requireRole(svc *banlist.Service, role banlist.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return httpapi.Handle(func(w http.ResponseWriter, r *http.Request) error {
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || strings.TrimSpace(token) == "" {
				return outpost.Errorf(outpost.Unauthorized, "unauthorized", "an API key is required: Authorization: Bearer <key>")
			}
			k, err := svc.Authenticate(r.Context(), strings.TrimSpace(token))
			if err != nil {
				return err
			}
			if !k.Role.Includes(role) {
				return outpost.Errorf(outpost.Forbidden, "forbidden", "this API key's role (%s) cannot do this; it needs %s", k.Role, role)
			}
			next.ServeHTTP(w, r.WithContext(newContextWithKey(r.Context(), k)))
			return nil
		})
	}
}

// PassBlocked lets an admin key through a block of its own address to
// list and lift blocks (GET /admin/blocked-ips, POST /admin/unblock-ip
// under mount): no block can lock the admins out of undoing it. Any other
// request, or another role, meets the block.
func PassBlocked(svc *banlist.Service, mount string) func(r *http.Request) bool {
	return func(r *http.Request) bool {
		p := strings.TrimPrefix(r.URL.Path, mount)
		if !(r.Method == http.MethodPost && p == "/admin/unblock-ip") && !(r.Method == http.MethodGet && p == "/admin/blocked-ips") {
			return false
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return false
		}
		k, err := svc.Authenticate(r.Context(), strings.TrimSpace(token))
		return err == nil && k.Role.Includes(banlist.RoleAdmin)
	}
}

// RequireAdmin admits requests with an admin API key of the ban list, as
// its own admin routes do; other services' admin routes (the audit wallet's
// under /mintdir/admin) use it, so there is one set of keys.
func RequireAdmin(svc *banlist.Service) func(http.Handler) http.Handler {
	return requireRole(svc, banlist.RoleAdmin)
}
