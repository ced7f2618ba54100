package ecash

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/elnosh/gonuts/cashu"
	"github.com/outpost-relay/outpost/internal/storage/kv"
)

// Records under the wallet's prefix (Config.Prefix: kv.PrefixWallet for
// the faucet's, kv.PrefixAuditWallet for the auditor's, each with its own
// seed, counters and operations). Per-mint records carry the mint's
// namespace (8 bytes of SHA-256 of its URL) after the kind byte; counters
// are per keyset id alone, so two mints that share an id still never share
// a counter.
const (
	kindSeed    byte = 0x01 // → seedRecord
	kindKeyset  byte = 0x02 // ns + keyset id → Keyset
	kindCounter byte = 0x03 // keyset id → next unused counter (uint32, big-endian)
	kindProof   byte = 0x04 // ns + Y → proofRecord: every proof the wallet holds
	kindOp      byte = 0x05 // op id → Op
	kindOpenOp  byte = 0x06 // ns + op id → "": operations not settled yet
	kindRef     byte = 0x07 // ns + caller's reference → op id
	kindMintQ   byte = 0x08 // ns + quote id → mintQuoteRecord
	_           byte = 0x09 // development builds' record of an imported gonuts wallet: not reused
	kindSentOp  byte = 0x0A // ns + op id → "": operations whose token the mint has not seen redeemed
	kindTotals  byte = 0x0B // ns → Totals: sats no operation's caller books
	kindOwed    byte = 0x0C // ns + op id + output index → owedRecord: outputs the mint signed whose signatures never verified
)

// owedRecord is an output the mint signed (it took the inputs) whose
// signature never verified, booked as lost until a restore brings it back.
type owedRecord struct {
	Output Output `json:"output"`
	Sats   uint64 `json:"sats"`
	Op     string `json:"op"`
	Why    string `json:"why"`
}

func namespace(mint string) []byte {
	h := sha256.Sum256([]byte(mint))
	return h[:8]
}

func (w *Wallet) key(kind byte, parts ...string) []byte {
	b := make([][]byte, 0, len(parts)+1)
	b = append(b, w.ns)
	for _, p := range parts {
		b = append(b, []byte(p))
	}
	return kv.Key(w.pre, kind, b...)
}

func (w *Wallet) counterKey(id string) []byte { return kv.Key(w.pre, kindCounter, []byte(id)) }
func (w *Wallet) opKey(id string) []byte      { return kv.Key(w.pre, kindOp, []byte(id)) }

type seedRecord struct {
	Mnemonic  string `json:"mnemonic"`
	Seed      []byte `json:"seed"` // BIP39 seed of the mnemonic (empty passphrase)
	CreatedAt int64  `json:"created_at"`
	Source    string `json:"source"` // "new": made by this wallet
}

// Proof states in the store.
const (
	proofUnspent  = "unspent"  // spendable
	proofReserved = "reserved" // an operation (Op) spends it
	// The mint refused it (could not verify it, does not know its
	// keyset): out of the spendable set, kept with the reason, and tried
	// alone again by Tidy.
	proofQuarantined = "quarantined"
)

type proofRecord struct {
	Proof  cashu.Proof `json:"proof"`
	State  string      `json:"state"`
	Op     string      `json:"op,omitempty"`
	Added  int64       `json:"added"`
	Reason string      `json:"reason,omitempty"` // why it is quarantined
}

// Totals are the sats of a wallet that no caller's books hold: what a
// faulty mint cost (signatures that never verified, proofs it says were
// spent elsewhere), what it gave beyond what was paid in (a mint that
// signed outputs of a swap it then did not carry out; a token received by
// a swap the mint carried out after its caller, who booked nothing, was
// told it failed), and the fees of the wallet's own housekeeping (moving
// proofs off retired keysets, retrying quarantined ones) and of swaps the
// mint carried out after the payout that made them gave up on them
// (Op.Abandoned). Written in the transaction that records the operation,
// so they agree with the proofs at every moment.
type Totals struct {
	LostSats        uint64 `json:"lost_sats"`
	SurplusSats     uint64 `json:"surplus_sats"`
	InternalFeeSats uint64 `json:"internal_fee_sats"`
}

// subTotals takes sub from the wallet's Totals (lost sats recovered).
func (w *Wallet) subTotals(txn *kv.Txn, sub Totals) error {
	if sub == (Totals{}) {
		return nil
	}
	var t Totals
	if _, err := kv.GetJSON(txn, w.key(kindTotals), &t); err != nil {
		return err
	}
	t.LostSats -= min(t.LostSats, sub.LostSats)
	t.SurplusSats += sub.SurplusSats // recovered beyond what was booked lost
	return kv.PutJSON(txn, w.key(kindTotals), t)
}

func (w *Wallet) addTotals(txn *kv.Txn, add Totals) error {
	if add == (Totals{}) {
		return nil
	}
	var t Totals
	if _, err := kv.GetJSON(txn, w.key(kindTotals), &t); err != nil {
		return err
	}
	t.LostSats += add.LostSats
	t.SurplusSats += add.SurplusSats
	t.InternalFeeSats += add.InternalFeeSats
	return kv.PutJSON(txn, w.key(kindTotals), t)
}

type mintQuoteRecord struct {
	MintQuote
	Created int64  `json:"created"`
	Op      string `json:"op,omitempty"` // the operation minting it
}

func (w *Wallet) readCounter(txn *kv.Txn, id string) (uint32, error) {
	item, err := txn.Get(w.counterKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n uint32
	err = item.Value(func(b []byte) error {
		if len(b) != 4 {
			return errors.New("ecash: bad counter record")
		}
		n = binary.BigEndian.Uint32(b)
		return nil
	})
	return n, err
}

// reserveCounters takes n counters of keyset id in txn: they are the
// wallet's from the moment txn commits, before any request leaves, so no
// output is ever derived twice.
func (w *Wallet) reserveCounters(txn *kv.Txn, id string, n int) (uint32, error) {
	c, err := w.readCounter(txn, id)
	if err != nil {
		return 0, err
	}
	if uint64(c)+uint64(n) >= 1<<31 {
		return 0, errors.New("ecash: keyset counter exhausted")
	}
	return c, txn.Set(w.counterKey(id), binary.BigEndian.AppendUint32(nil, c+uint32(n)))
}
