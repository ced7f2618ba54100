package web

import (
	"net/http"
	"slices"
	"time"

	"github.com/outpost-relay/outpost/faucet"
)

type faucetView struct {
	Mount     string
	PublicURL string // NIP-98 events are signed for PublicURL + Mount + path
	Config    faucet.PublicConfig
	Stats     faucet.Stats
	UpdatedAt time.Time
	// OtherMints are the mints besides the faucet's own whose tokens it takes.
	OtherMints []string
	Nutzaps    bool // the nutzap method is on offer
}

// handleFaucet renders what anyone may know about the faucet; signing in,
// claiming and giving back are done by faucet.js against the API.
func (p *Pages) handleFaucet(w http.ResponseWriter, r *http.Request) {
	v := faucetView{Mount: p.cfg.Faucet.Mount, PublicURL: p.cfg.PublicURL}
	if err := p.faucet.getAll(r, into{"/config", &v.Config}, into{"/stats", &v.Stats}); err != nil {
		p.fail(w, r, err)
		return
	}
	v.UpdatedAt = time.Unix(v.Stats.UpdatedAt, 0)
	v.Nutzaps = slices.Contains(v.Config.PayoutMethods, faucet.MethodNutzap)
	for _, m := range v.Config.Deposits.AcceptedMints {
		if m != v.Config.MintURL {
			v.OtherMints = append(v.OtherMints, m)
		}
	}
	p.render(w, r, http.StatusOK, "faucet", view{Title: "Test-sats faucet", Section: "faucet", Script: "faucet.js", Main: v})
}
