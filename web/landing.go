package web

import (
	"net/http"

	"github.com/outpost-relay/outpost"
)

// relayInfo is the part of the relay's NIP-11 document the landing page shows.
type relayInfo struct {
	Name          string `json:"name"`
	Description   string `json:"description"`
	PubKey        string `json:"pubkey"`
	Contact       string `json:"contact"`
	SupportedNIPs []any  `json:"supported_nips"`
	Software      string `json:"software"`
	Version       string `json:"version"`
}

type serviceCard struct {
	Name, Page, API, What string
	Status                string // from the service's /health: ok, degraded, down
}

type landingView struct {
	Relay    relayInfo
	RelayURL string
	Version  string
	Services []serviceCard
}

// handleLanding tells a browser at the relay's address what this server
// offers. The relay's NIP-11 document comes from the relay itself (relay is
// the handler behind the pages, which answers NIP-11 at "/").
func (p *Pages) handleLanding(relay http.Handler) http.HandlerFunc {
	nip11 := apiClient{relay}
	return func(w http.ResponseWriter, r *http.Request) {
		v := landingView{RelayURL: p.cfg.RelayURL, Version: outpost.Version}
		if _, err := nip11.call(r, http.MethodGet, "/", nil, &v.Relay, "Accept", "application/nostr+json"); err != nil {
			p.fail(w, r, err)
			return
		}
		for _, s := range []struct {
			api        apiClient
			mount      string
			name, what string
		}{
			{p.faucet, p.cfg.Faucet.Mount, "Test-sats faucet", "Sign in with Nostr and get a few sats of test money, as Cashu ecash or over Lightning."},
			{p.mintdir, p.cfg.Mintdir.Mount, "Cashu mint directory", "Uptime, response times, incidents, metadata, trust and reviews of Cashu mints."},
			{p.banlist, p.cfg.Banlist.Mount, "Ban list", "The keys and words this relay refuses, and the moderation console for reports and bans."},
		} {
			if !s.api.ok() {
				continue
			}
			var h outpost.Health[any]
			if err := s.api.get(r, "/health", &h); err != nil {
				h.Status = "down"
			}
			v.Services = append(v.Services, serviceCard{Name: s.name, Page: s.mount + "/", API: s.mount + "/openapi.json", What: s.what, Status: h.Status})
		}
		p.render(w, r, http.StatusOK, "landing", view{Title: v.Relay.Name, Section: "home", Main: v})
	}
}
