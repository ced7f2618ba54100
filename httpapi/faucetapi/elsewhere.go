package faucetapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/outpost-relay/outpost"
	"github.com/outpost-relay/outpost/httpapi"
)

// Elsewhere is the faucet API of a node that runs no faucet because another
// node of the same service does (OUTPOST_FAUCET_PRIMARY): the faucet's
// wallet is money and has one writer. Its document is served as anywhere;
// every other request is 503 faucet_elsewhere naming the faucet's URL in
// details.faucet. Requests are not proxied there: a client that is told
// where the faucet is logs in and claims there, with its own NIP-98 events
// for that URL, and no node stands in the middle of a payout.
func Elsewhere(primary string, log *slog.Logger) http.Handler {
	refuse := httpapi.Handle(func(http.ResponseWriter, *http.Request) error {
		return outpost.Errorf(outpost.Unavailable, "faucet_elsewhere", "this outpost runs no faucet: it is at %s", primary).With("faucet", primary)
	})
	r := chi.NewRouter()
	r.Use(httpapi.Logger(log))
	r.Use(httpapi.CORS)
	r.MethodNotAllowed(httpapi.MethodNotAllowed)
	r.Get("/openapi.json", httpapi.ServeJSON(openAPI))
	r.NotFound(refuse)
	return r
}
