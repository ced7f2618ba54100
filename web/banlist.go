package web

import (
	"net/http"

	"github.com/outpost-relay/outpost/banlist"
)

type consoleView struct {
	Mount        string
	BootstrapKey bool
	Bans         banlist.BlockedPubKeys
	Words        banlist.BlockedWords
}

// handleConsole renders the public ban list and blocked words; the
// moderation console (sign in with an API key, reports, bans, words, keys,
// audit log) is console.js against the API, with the key kept in the tab's
// sessionStorage only.
func (p *Pages) handleConsole(w http.ResponseWriter, r *http.Request) {
	v := consoleView{Mount: p.cfg.Banlist.Mount, BootstrapKey: p.cfg.BootstrapKey}
	if err := p.banlist.getAll(r, into{"/blocked/pubkeys", &v.Bans}, into{"/blocked/words", &v.Words}); err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, "banlist", view{Title: "Ban list and moderation", Section: "banlist", Script: "console.js", Main: v})
}
