// Package lnbitstest is an LNbits-compatible Lightning wallet on 127.0.0.1
// for tests, backed by a node of a fake Lightning network (devmint.Network).
// A Nutshell mint on its LNbits backend (nutshelltest with Server.Env) and
// the embedded gonuts mints on the same network then pay each other's
// invoices: a melt at one settles a mint quote at the other.
//
// It serves what Nutshell 0.20.3's LNbitsWallet uses
// (cashu/lightning/lnbits.py in the bundle), all under the X-Api-Key header:
//
//   - GET /api/v1/wallet: the balance, which Nutshell checks when it starts
//     (a failure there stops it);
//   - POST /api/v1/payments: {"out": false, "amount", "memo"} makes an
//     invoice, {"out": true, "bolt11"} pays one;
//   - GET /api/v1/payments/{payment_hash}: a payment's or an invoice's
//     state ({"paid", "preimage", "details": {"status", "pending", "fee"}});
//   - GET /api/v1/payments/sse: the stream of paid invoices
//     ("event: payment-received" then "data: {"payment_hash": ...}"), the
//     older LNbits API Nutshell tries first.
package lnbitstest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/elnosh/gonuts/mint/lightning"
	decodepay "github.com/nbd-wtf/ln-decodepay"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
)

// Server is a running LNbits-compatible wallet.
type Server struct {
	URL  string // http://127.0.0.1:port
	Key  string // the API key Nutshell sends as X-Api-Key
	Node *devmint.Node

	srv *http.Server
}

// Start runs a server on network until t ends. Start it before the mints
// that use it, so that they stop first.
func Start(t testing.TB, network *devmint.Network) *Server {
	t.Helper()
	node, err := network.NewNode("")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		node.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{URL: "http://" + ln.Addr().String(), Key: "outpost-lnbitstest-key", Node: node}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/wallet", s.wallet)
	mux.HandleFunc("POST /api/v1/payments", s.payments)
	mux.HandleFunc("GET /api/v1/payments/sse", s.stream)
	mux.HandleFunc("GET /api/v1/payments/{hash}", s.status)
	s.srv = &http.Server{Handler: s.auth(mux), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go s.srv.Serve(ln)
	t.Cleanup(func() {
		cancel() // ends the streams
		s.srv.Close()
		node.Close()
	})
	return s
}

// Env is the settings that put a Nutshell mint on this server.
func (s *Server) Env() []string {
	return []string{"MINT_BACKEND_BOLT11_SAT=LNbitsWallet", "MINT_LNBITS_ENDPOINT=" + s.URL, "MINT_LNBITS_KEY=" + s.Key}
}

func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != s.Key {
			answer(w, http.StatusUnauthorized, map[string]any{"detail": "Invalid key"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) wallet(w http.ResponseWriter, _ *http.Request) {
	answer(w, http.StatusOK, map[string]any{"id": "outpost", "name": "outpost test wallet", "balance": int64(1e12)})
}

func (s *Server) payments(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Out    bool   `json:"out"`
		Amount int64  `json:"amount"`
		Memo   string `json:"memo"`
		Bolt11 string `json:"bolt11"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		answer(w, http.StatusBadRequest, map[string]any{"detail": "invalid body: " + err.Error()})
		return
	}
	if !in.Out {
		if in.Amount < 1 {
			answer(w, http.StatusBadRequest, map[string]any{"detail": "amount must be positive"})
			return
		}
		inv, err := s.Node.CreateInvoice(uint64(in.Amount))
		if err != nil {
			answer(w, http.StatusInternalServerError, map[string]any{"detail": err.Error()})
			return
		}
		answer(w, http.StatusCreated, map[string]any{"payment_hash": inv.PaymentHash, "checking_id": inv.PaymentHash,
			"payment_request": inv.PaymentRequest, "bolt11": inv.PaymentRequest})
		return
	}
	st, err := s.Node.SendPayment(r.Context(), in.Bolt11, 0)
	switch {
	case err != nil:
		answer(w, http.StatusBadRequest, map[string]any{"detail": err.Error()})
	case st.PaymentStatus == lightning.Failed:
		// LNbits answers a failed payment with 520 and its reason.
		answer(w, 520, map[string]any{"detail": "payment failed: " + st.PaymentFailureReason})
	default:
		hash := paymentHash(in.Bolt11)
		answer(w, http.StatusCreated, map[string]any{"payment_hash": hash, "checking_id": hash})
	}
}

// paymentHash is the invoice's payment hash; SendPayment decoded it already.
func paymentHash(bolt11 string) string {
	inv, err := decodepay.Decodepay(bolt11)
	if err != nil {
		return ""
	}
	return inv.PaymentHash
}

// status answers a payment this node made or, failing that, an invoice it
// issued, as LNbits does (fee in msat).
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	hash := r.PathValue("hash")
	var paid bool
	var state, preimage string
	if p, err := s.Node.OutgoingPaymentStatus(r.Context(), hash); err == nil {
		paid, preimage = p.PaymentStatus == lightning.Succeeded, p.Preimage
		state = map[lightning.State]string{lightning.Succeeded: "success", lightning.Pending: "pending", lightning.Failed: "failed"}[p.PaymentStatus]
	} else if inv, err := s.Node.InvoiceStatus(hash); err == nil {
		paid, state = inv.Settled, "pending"
		if paid {
			state, preimage = "success", inv.Preimage
		}
	} else {
		answer(w, http.StatusNotFound, map[string]any{"detail": "Payment does not exist."})
		return
	}
	answer(w, http.StatusOK, map[string]any{"paid": paid, "preimage": preimage,
		"details": map[string]any{"status": state, "pending": state == "pending", "fee": 0, "payment_hash": hash}})
}

// stream tells the invoices paid from now on, until the client or the
// server goes.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	f, ok := w.(http.Flusher)
	if !ok {
		answer(w, http.StatusInternalServerError, map[string]any{"detail": "no streaming"})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	for from := s.Node.SettledCount(); ; {
		hashes, next, err := s.Node.Settled(r.Context(), from)
		if err != nil {
			return
		}
		for _, h := range hashes {
			b, _ := json.Marshal(map[string]any{"payment_hash": h})
			if _, err := fmt.Fprintf(w, "event: payment-received\ndata: %s\n\n", b); err != nil {
				return
			}
		}
		f.Flush()
		from = next
	}
}
