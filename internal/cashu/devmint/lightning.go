package devmint

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/lightningnetwork/lnd/lnwire"
	"github.com/lightningnetwork/lnd/zpay32"
	decodepay "github.com/nbd-wtf/ln-decodepay"
	"github.com/outpost-relay/outpost/internal/ops/atomicfile"
)

// Network is a fake Lightning network: its nodes can pay each other's
// invoices, with real preimages, so a melt at one mint can pay a mint quote
// at another. Invoices start unpaid. It stands in for the outside world in
// tests and behind the embedded test mint.
type Network struct {
	mu    sync.Mutex
	nodes []*Node
}

// DefaultNetwork is the network of nodes made by NewNode.
var DefaultNetwork = &Network{}

// Node is one fake Lightning node; it implements gonuts' lightning.Client.
// It is safe for concurrent use.
type Node struct {
	net  *Network
	path string // where invoices are kept across restarts; "" for none

	mu       sync.Mutex
	changed  *sync.Cond
	invoices map[string]*invoice // by payment hash: invoices this node issued
	payments map[string]*payment // by payment hash: payments this node made
	settled  []string            // payment hashes of this node's invoices, in the order they were paid
	closed   bool
	key      *secp256k1.PrivateKey // signs this node's invoices

	outcome func(bolt11 string) lightning.State // see SetOutcome

	// FeeReserveFn is the fee reserve per payment; default none. Set it
	// before the node is used.
	FeeReserveFn func(amount uint64) uint64
}

// SetOutcome makes f decide the fate of outgoing payments before the network
// is tried: return lightning.Failed or lightning.Pending to simulate them,
// Kept for a payment reported made that never leaves, or
// lightning.Succeeded to let a payment go ahead. nil restores the default.
func (nd *Node) SetOutcome(f func(bolt11 string) lightning.State) {
	nd.mu.Lock()
	nd.outcome = f
	nd.mu.Unlock()
}

// Kept is an outcome for SetOutcome: the payment is reported made, with a
// preimage that is not the invoice's, and never reaches the payee. The
// mint then takes the melt's inputs as spent and the payee is never paid:
// a mint that keeps its melts' sats.
const Kept lightning.State = -1

type invoice struct {
	Request  string `json:"request"`
	Hash     string `json:"hash"`
	Preimage string `json:"preimage"`
	Amount   uint64 `json:"amount"`
	Settled  bool   `json:"settled"`
	Expiry   int64  `json:"expiry"` // Unix time
}

type payment struct {
	Hash     string          `json:"hash"`
	Preimage string          `json:"preimage"`
	State    lightning.State `json:"state"`
	Reason   string          `json:"reason"`
}

// NewNode joins a new node to n. With a path, its invoices and payments are
// kept in that file, so a restarted mint still knows its quotes.
func (n *Network) NewNode(path string) (*Node, error) {
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return nil, err
	}
	node := &Node{net: n, path: path, invoices: map[string]*invoice{}, payments: map[string]*payment{}, key: key}
	node.changed = sync.NewCond(&node.mu)
	if path != "" {
		b, err := os.ReadFile(path)
		if err == nil {
			var saved struct {
				Invoices map[string]*invoice `json:"invoices"`
				Payments map[string]*payment `json:"payments"`
			}
			if err := json.Unmarshal(b, &saved); err != nil {
				return nil, err
			}
			if saved.Invoices != nil {
				node.invoices = saved.Invoices
			}
			if saved.Payments != nil {
				node.payments = saved.Payments
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	n.mu.Lock()
	n.nodes = append(n.nodes, node)
	n.mu.Unlock()
	return node, nil
}

// NewNode makes a node on DefaultNetwork.
func NewNode(path string) (*Node, error) { return DefaultNetwork.NewNode(path) }

// Close wakes invoice subscribers and leaves the network.
func (nd *Node) Close() {
	nd.mu.Lock()
	nd.closed = true
	nd.changed.Broadcast()
	nd.mu.Unlock()
	nd.net.mu.Lock()
	defer nd.net.mu.Unlock()
	for i, o := range nd.net.nodes {
		if o == nd {
			nd.net.nodes = append(nd.net.nodes[:i], nd.net.nodes[i+1:]...)
			break
		}
	}
}

// save must be called with nd.mu held. The file is replaced whole, on
// disk: a power cut after a rename of a file not yet written out could
// leave it empty, and the next start would refuse it.
func (nd *Node) save() {
	if nd.path == "" {
		return
	}
	b, _ := json.Marshal(map[string]any{"invoices": nd.invoices, "payments": nd.payments})
	atomicfile.WriteFile(nd.path, b, 0o600)
}

func (nd *Node) ConnectionStatus() error { return nil }

func (nd *Node) CreateInvoice(amount uint64) (lightning.Invoice, error) {
	preimage, hash := randomPreimage()
	req, err := Invoice(nd.key, hash, amount, "test")
	if err != nil {
		return lightning.Invoice{}, err
	}
	inv := &invoice{Request: req, Hash: hash, Preimage: preimage, Amount: amount, Expiry: time.Now().Add(invoiceExpiry).Unix()}
	nd.mu.Lock()
	nd.invoices[hash] = inv
	nd.save()
	nd.mu.Unlock()
	return inv.public(), nil
}

// Invoice is a signet BOLT11 invoice for amount sats with payment hash
// hash (hex), signed by key, with the payment secret that BOLT 11 requires
// and Nutshell's decoder demands (gonuts' fake invoices have none), so
// that both gonuts and Nutshell decode it as a real one.
func Invoice(key *secp256k1.PrivateKey, hash string, amount uint64, description string) (string, error) {
	h, err := hex.DecodeString(hash)
	if err != nil || len(h) != 32 {
		return "", errors.New("devmint: a payment hash is 32 bytes of hex")
	}
	var secret [32]byte
	rand.Read(secret[:])
	inv, err := zpay32.NewInvoice(&chaincfg.SigNetParams, [32]byte(h), time.Now(),
		zpay32.Amount(lnwire.MilliSatoshi(amount*1000)), zpay32.Description(description),
		zpay32.PaymentAddr(secret), zpay32.Expiry(invoiceExpiry))
	if err != nil {
		return "", err
	}
	return inv.Encode(zpay32.MessageSigner{SignCompact: func(msg []byte) ([]byte, error) {
		h := sha256.Sum256(msg) // BOLT 11 signs the single SHA-256 of the message
		return ecdsa.SignCompact(key, h[:], true), nil
	}})
}

// invoiceExpiry is how long an invoice can be paid: the expiry that
// gonuts' fake invoices carry (BOLT 11's default).
const invoiceExpiry = time.Hour

// public is the invoice as gonuts sees it, whose Expiry is in seconds from
// now (it adds them to the time to get the mint quote's expiry).
func (i *invoice) public() lightning.Invoice {
	left := max(0, time.Until(time.Unix(i.Expiry, 0)))
	return lightning.Invoice{PaymentRequest: i.Request, PaymentHash: i.Hash, Preimage: i.Preimage, Settled: i.Settled, Amount: i.Amount,
		Expiry: uint64(left.Round(time.Second) / time.Second)}
}

func (nd *Node) InvoiceStatus(hash string) (lightning.Invoice, error) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	inv, ok := nd.invoices[hash]
	if !ok {
		return lightning.Invoice{}, errors.New("invoice does not exist")
	}
	return inv.public(), nil
}

// PayInvoice settles one of this node's invoices as if someone outside the
// test network paid it, e.g. to fund a wallet through a mint quote.
func (nd *Node) PayInvoice(bolt11 string) error {
	inv, err := decodepay.Decodepay(bolt11)
	if err != nil {
		return err
	}
	_, err = nd.settle(inv.PaymentHash, uint64(inv.MSatoshi)/1000)
	return err
}

var errUnknownInvoice = errors.New("no route: the invoice is not from this test network")

// settle marks the invoice paid and returns its preimage.
func (nd *Node) settle(hash string, amount uint64) (string, error) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	inv, ok := nd.invoices[hash]
	switch {
	case !ok:
		return "", errUnknownInvoice
	case inv.Settled:
		return "", errors.New("invoice already paid")
	case inv.Amount != amount:
		return "", errors.New("amount does not match the invoice")
	case time.Now().Unix() > inv.Expiry:
		return "", errors.New("invoice expired")
	}
	inv.Settled = true
	nd.settled = append(nd.settled, hash)
	nd.save()
	nd.changed.Broadcast()
	return inv.Preimage, nil
}

func (nd *Node) SendPayment(ctx context.Context, request string, maxFee uint64) (lightning.PaymentStatus, error) {
	inv, err := decodepay.Decodepay(request)
	if err != nil {
		return lightning.PaymentStatus{}, err
	}
	return nd.pay(inv.PaymentHash, uint64(inv.MSatoshi)/1000, request, inv.Description)
}

func (nd *Node) PayPartialAmount(ctx context.Context, request string, amountMsat uint64, maxFee uint64) (lightning.PaymentStatus, error) {
	inv, err := decodepay.Decodepay(request)
	if err != nil {
		return lightning.PaymentStatus{}, err
	}
	return nd.pay(inv.PaymentHash, amountMsat/1000, request, inv.Description)
}

func (nd *Node) pay(hash string, amount uint64, request, description string) (lightning.PaymentStatus, error) {
	p := &payment{Hash: hash, State: lightning.Succeeded}
	nd.mu.Lock()
	outcome := nd.outcome
	nd.mu.Unlock()
	forced := lightning.Succeeded
	if outcome != nil {
		forced = outcome(request)
	}
	switch {
	case description == lightning.FailPaymentDescription:
		p.State, p.Reason = lightning.Failed, "payment failed"
	case forced == Kept:
		p.State, p.Preimage = lightning.Succeeded, hex.EncodeToString(make([]byte, 32))
	case forced != lightning.Succeeded:
		p.State = forced
		p.Reason = "payment " + map[lightning.State]string{lightning.Failed: "failed", lightning.Pending: "pending"}[p.State]
	default:
		var err error
		if p.Preimage, err = nd.net.route(hash, amount); err != nil {
			p.State, p.Reason = lightning.Failed, err.Error()
		}
	}
	nd.mu.Lock()
	nd.payments[hash] = p
	nd.save()
	nd.mu.Unlock()
	return lightning.PaymentStatus{Preimage: p.Preimage, PaymentStatus: p.State, PaymentFailureReason: p.Reason}, nil
}

// route pays the node of the network that issued the invoice.
func (n *Network) route(hash string, amount uint64) (string, error) {
	n.mu.Lock()
	nodes := append([]*Node(nil), n.nodes...)
	n.mu.Unlock()
	for _, nd := range nodes {
		preimage, err := nd.settle(hash, amount)
		if !errors.Is(err, errUnknownInvoice) {
			return preimage, err
		}
	}
	return "", errUnknownInvoice
}

// ResolvePending finishes a payment SetOutcome left pending: with
// succeed, the invoice is paid through the network; otherwise it fails.
func (nd *Node) ResolvePending(bolt11 string, succeed bool) error {
	inv, err := decodepay.Decodepay(bolt11)
	if err != nil {
		return err
	}
	nd.mu.Lock()
	p, ok := nd.payments[inv.PaymentHash]
	nd.mu.Unlock()
	if !ok || p.State != lightning.Pending {
		return errors.New("no pending payment for this invoice")
	}
	state, preimage, reason := lightning.Failed, "", "payment failed"
	if succeed {
		if preimage, err = nd.net.route(inv.PaymentHash, uint64(inv.MSatoshi)/1000); err == nil {
			state, reason = lightning.Succeeded, ""
		} else {
			reason = err.Error()
		}
	}
	nd.mu.Lock()
	p.State, p.Preimage, p.Reason = state, preimage, reason
	nd.save()
	nd.mu.Unlock()
	return nil
}

func (nd *Node) OutgoingPaymentStatus(ctx context.Context, hash string) (lightning.PaymentStatus, error) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	p, ok := nd.payments[hash]
	if !ok {
		return lightning.PaymentStatus{}, errors.New("payment does not exist")
	}
	return lightning.PaymentStatus{Preimage: p.Preimage, PaymentStatus: p.State, PaymentFailureReason: p.Reason}, nil
}

func (nd *Node) FeeReserve(amount uint64) uint64 {
	if nd.FeeReserveFn != nil {
		return nd.FeeReserveFn(amount)
	}
	return 0
}

// SubscribeInvoice returns a subscription whose Recv blocks until the invoice
// is paid or the node closes.
func (nd *Node) SubscribeInvoice(hash string) (lightning.InvoiceSubscriptionClient, error) {
	return &invoiceSub{nd: nd, hash: hash}, nil
}

type invoiceSub struct {
	nd   *Node
	hash string
}

func (s *invoiceSub) Recv() (lightning.Invoice, error) {
	nd := s.nd
	nd.mu.Lock()
	defer nd.mu.Unlock()
	for {
		inv, ok := nd.invoices[s.hash]
		if !ok {
			return lightning.Invoice{}, errors.New("invoice does not exist")
		}
		if inv.Settled {
			return inv.public(), nil
		}
		if nd.closed {
			return lightning.Invoice{}, errors.New("lightning node closed")
		}
		nd.changed.Wait()
	}
}

// Settled waits until more than from of this node's invoices were paid
// since it joined the network, and returns the payment hashes of those
// past from, and the count to wait past next; it returns early with
// ctx's error, or when the node closes. An LNbits-style stream of paid
// invoices (testkit/lnbitstest) reads it.
func (nd *Node) Settled(ctx context.Context, from int) (hashes []string, next int, err error) {
	stop := context.AfterFunc(ctx, func() {
		nd.mu.Lock()
		nd.changed.Broadcast()
		nd.mu.Unlock()
	})
	defer stop()
	nd.mu.Lock()
	defer nd.mu.Unlock()
	for len(nd.settled) <= from {
		switch {
		case ctx.Err() != nil:
			return nil, from, ctx.Err()
		case nd.closed:
			return nil, from, errors.New("lightning node closed")
		}
		nd.changed.Wait()
	}
	return append([]string(nil), nd.settled[from:]...), len(nd.settled), nil
}

// SettledCount is how many of this node's invoices were paid since it
// joined the network: Settled from it waits for the next.
func (nd *Node) SettledCount() int {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return len(nd.settled)
}

// randomPreimage returns a preimage and its payment hash, hex encoded.
func randomPreimage() (preimage, hash string) {
	var b [32]byte
	rand.Read(b[:])
	h := sha256.Sum256(b[:])
	return hex.EncodeToString(b[:]), hex.EncodeToString(h[:])
}
