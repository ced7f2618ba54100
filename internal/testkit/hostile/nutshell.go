package hostile

import (
	"testing"

	"github.com/outpost-relay/outpost/internal/testkit/nutshelltest"
)

// Rotation says how RestartNutshell changes a Nutshell mint's keysets.
//
// What Nutshell 0.20.3 does with keysets when it starts (cashu/mint/keysets.go,
// init_keysets): it loads every keyset in its database with the active flag
// stored there, then activates the keyset of MINT_DERIVATION_PATH (default
// m/0'/0'/0'), creating and storing it (active, with the current
// MINT_INPUT_FEE_PPK) if it is new. It never retires a keyset by itself: a
// start with a new path gives two active keysets, and only a keyset marked
// inactive in the database (Retire) is inactive. If an active keyset has the
// same path but a higher last index, that one is used instead of the path
// given, so once m/0'/0'/1' exists a start without a path keeps it. A start
// with a retired keyset's own path makes it active again (in memory), so
// pass the new path on every later start, or none.
type Rotation struct {
	Path   string   // MINT_DERIVATION_PATH, e.g. "m/0'/0'/1'"; "" = Nutshell's choice as above
	Retire []string // keyset ids to mark inactive while the mint is stopped
	Env    []string // settings for the new start (those of earlier starts are not remembered), e.g. MINT_INPUT_FEE_PPK=0
	Name   string   // MINT_INFO_NAME; "" = nutshelltest's default
}

// RestartNutshell stops m, changes its keysets as r says, and starts it
// again with the same data directory and port (so at the same URL: wallets
// know a mint by its URL). If p is not nil, it is pointed at the new mint.
// While the mint is down, p answers 502 to what it forwards; call p.Down
// first to make that a refused connection instead. A typical rotation is two
// restarts, as an operator would do it: a new active keyset first
// (Rotation{Path: "m/0'/0'/1'"}), then the old one retired
// (Rotation{Path: "m/0'/0'/1'", Retire: []string{oldID}}); or both at once.
func RestartNutshell(t testing.TB, m *nutshelltest.Mint, r Rotation, p *Proxy) *nutshelltest.Mint {
	t.Helper()
	m.Stop()
	for _, id := range r.Retire {
		if err := nutshelltest.SetKeysetActive(m.Dir, id, false); err != nil {
			t.Fatal(err)
		}
	}
	env := append([]string(nil), r.Env...)
	if r.Path != "" {
		env = append(env, "MINT_DERIVATION_PATH="+r.Path)
	}
	m2 := nutshelltest.StartT(t, nutshelltest.Options{Dir: m.Dir, Port: m.Port, Name: r.Name, Env: env})
	if p != nil {
		p.SetUpstream(m2.URL)
	}
	return m2
}
