// Package lnurltest serves Lightning addresses (LUD-16/LUD-06) on 127.0.0.1
// for tests. Each user's invoices come from a function the test gives, e.g.
// a mint quote of the user's own Cashu wallet, so a test can prove that a
// payment to the address really arrived.
package lnurltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Server is a loopback Lightning-address server.
type Server struct {
	URL    string // http://127.0.0.1:port
	Domain string // 127.0.0.1:port, the domain part of its addresses

	// Metadata is the payRequest metadata; MinSats and MaxSats its range.
	Metadata         string
	MinSats, MaxSats int64

	mu    sync.Mutex
	users map[string]func(amountSats int64) (string, error)
	calls map[string]int // invoices handed out per user
}

// New starts a server that stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{Metadata: `[["text/plain","outpost test address"]]`, MinSats: 1, MaxSats: 1_000_000,
		users: map[string]func(int64) (string, error){}, calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	s.Domain = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// Add serves user@Domain with invoices made by invoice, and returns the address.
func (s *Server) Add(user string, invoice func(amountSats int64) (string, error)) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[user] = invoice
	return user + "@" + s.Domain
}

// Invoices is how many invoices user was given.
func (s *Server) Invoices(user string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[user]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if user, ok := strings.CutPrefix(r.URL.Path, "/.well-known/lnurlp/"); ok {
		s.mu.Lock()
		_, known := s.users[user]
		s.mu.Unlock()
		if !known {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"status": "ERROR", "reason": "unknown user"})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"tag": "payRequest", "callback": s.URL + "/callback/" + user, "metadata": s.Metadata,
			"minSendable": s.MinSats * 1000, "maxSendable": s.MaxSats * 1000,
		})
		return
	}
	if user, ok := strings.CutPrefix(r.URL.Path, "/callback/"); ok {
		s.mu.Lock()
		invoice := s.users[user]
		s.calls[user]++
		s.mu.Unlock()
		msat, err := strconv.ParseInt(r.URL.Query().Get("amount"), 10, 64)
		if invoice == nil || err != nil || msat%1000 != 0 {
			json.NewEncoder(w).Encode(map[string]string{"status": "ERROR", "reason": "bad request"})
			return
		}
		pr, err := invoice(msat / 1000)
		if err != nil {
			json.NewEncoder(w).Encode(map[string]string{"status": "ERROR", "reason": fmt.Sprint(err)})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"pr": pr, "routes": []any{}})
		return
	}
	http.NotFound(w, r)
}
