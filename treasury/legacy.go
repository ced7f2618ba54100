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
	l = &ecash.Legacy{Source: "gonuts wallet " + dir, Mnemonic: db.GetMnemonic(), Seed: db.GetSeed(), Counters: map[string]uint32{}}
	if len(l.Seed) == 0 {
		return nil, 0, nil // created, never used
	}
	ours := map[string]bool{}
	for url, keysets := range db.GetKeysets() {
		same := false
		if n, err := NormalizeMintURL(url); err == nil && n == mint {
			same = true
		}
		for _, k := range keysets {
			// Counters are per keyset id whatever the mint: never reuse one.
			l.Counters[k.Id] = max(l.Counters[k.Id], k.Counter)
			if same {
				ours[k.Id] = true
			}
		}
	}
	for _, p := range db.GetProofs() {
		if ours[p.Id] {
			l.Proofs = append(l.Proofs, p)
		} else {
			other++
		}
	}
	melts := map[string]*ecash.LegacyMelt{}
	for _, dp := range db.GetPendingProofs() {
		if !ours[dp.Id] {
			other++
			continue
		}
		p := cashu.Proof{Amount: dp.Amount, Id: dp.Id, Secret: dp.Secret, C: dp.C, DLEQ: dp.DLEQ}
		if dp.MeltQuoteId == "" {
			l.Sent = append(l.Sent, p)
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
	for _, m := range melts {
		l.Melting = append(l.Melting, *m)
	}
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

// moveAside renames dir to dir.gonuts-<time>, keeping it for reference.
func moveAside(dir string) (string, error) {
	to := fmt.Sprintf("%s.gonuts-%s", dir, time.Now().UTC().Format("20060102T150405"))
	return to, os.Rename(dir, to)
}
