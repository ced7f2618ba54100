package treasury

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/cashu/nuts/nut04"
	"github.com/elnosh/gonuts/wallet/storage"
	"github.com/outpost-relay/outpost/ecash"
)

// readLegacy reads the gonuts v0.4.2 wallet an earlier outpost kept in dir
// (its bolt database, wallet.db): seed, keyset counters, proofs of mint,
// proofs in melts or handed out, and open mint quotes. nil when there is
// none. other counts proofs of other mints, which stay behind.
func readLegacy(dir, mint string) (l *ecash.Legacy, other int, err error) {
	if dir == "" {
		return nil, 0, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "wallet.db")); errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	} else if err != nil {
		return nil, 0, err
	}
	db, err := storage.InitBolt(dir)
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	l = &ecash.Legacy{Source: "gonuts wallet " + dir, Mnemonic: db.GetMnemonic(), Seed: db.GetSeed()}
	if len(l.Seed) == 0 {
		return nil, 0, nil // created, never used
	}
	var ours map[string]bool
	l.Counters, ours = legacyKeysets(db, mint)
	for _, p := range db.GetProofs() {
		if ours[p.Id] {
			l.Proofs = append(l.Proofs, p)
		} else {
			other++
		}
	}
	l.Melting, l.Sent, other = legacyPending(db, ours, other)
	for _, q := range db.GetMintQuotes() {
		if n, err := NormalizeMintURL(q.Mint); err != nil || n != mint || q.State == nut04.Issued {
			continue
		}
		exp := int64(q.QuoteExpiry)
		l.MintQuotes = append(l.MintQuotes, ecash.MintQuote{Quote: q.QuoteId, Request: q.PaymentRequest, Amount: q.Amount,
			State: q.State.String(), Expiry: &exp})
	}
	return l, other, nil
}

// legacyKeysets returns the counters of every keyset the old wallet knew
// (per keyset id, whatever the mint: none may be reused) and which of
// them are mint's.
func legacyKeysets(db *storage.BoltDB, mint string) (counters map[string]uint32, ours map[string]bool) {
	counters, ours = map[string]uint32{}, map[string]bool{}
	for url, keysets := range db.GetKeysets() {
		n, err := NormalizeMintURL(url)
		for _, k := range keysets {
			counters[k.Id] = max(counters[k.Id], k.Counter)
			if err == nil && n == mint {
				ours[k.Id] = true
			}
		}
	}
	return counters, ours
}

// legacyPending sorts the old wallet's pending proofs of our mint into
// melts (by quote) and handed-out tokens; other counts those of other mints.
func legacyPending(db *storage.BoltDB, ours map[string]bool, other int) ([]ecash.LegacyMelt, cashu.Proofs, int) {
	var sent cashu.Proofs
	melts := map[string]*ecash.LegacyMelt{}
	for _, dp := range db.GetPendingProofs() {
		if !ours[dp.Id] {
			other++
			continue
		}
		p := cashu.Proof{Amount: dp.Amount, Id: dp.Id, Secret: dp.Secret, C: dp.C, DLEQ: dp.DLEQ}
		if dp.MeltQuoteId == "" {
			sent = append(sent, p)
			continue
		}
		m := melts[dp.MeltQuoteId]
		if m == nil {
			m = &ecash.LegacyMelt{Quote: dp.MeltQuoteId}
			if q := db.GetMeltQuoteById(dp.MeltQuoteId); q != nil {
				m.Amount, m.FeeReserve = q.Amount, q.FeeReserve
			}
			melts[dp.MeltQuoteId] = m
		}
		m.Proofs = append(m.Proofs, p)
	}
	var out []ecash.LegacyMelt
	for _, m := range melts {
		out = append(out, *m)
	}
	return out, sent, other
}

// moveAside renames dir to dir.gonuts-<time>, keeping it for reference.
func moveAside(dir string) (string, error) {
	to := fmt.Sprintf("%s.gonuts-%s", dir, time.Now().UTC().Format("20060102T150405"))
	return to, os.Rename(dir, to)
}
