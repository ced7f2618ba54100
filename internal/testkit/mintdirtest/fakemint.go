// Package mintdirtest gives the mint directory's tests (its own, and the
// pages') a fake mint: an httptest server that answers like a Cashu mint run
// by someone else, whose answers are hostile at will.
package mintdirtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// FakeMint serves a NUT-06 info document, one keyset, the files a test
// adds, and misbehaves as told.
type FakeMint struct {
	*httptest.Server

	mu       sync.Mutex
	info     map[string]any
	files    map[string]file
	hits     map[string]int                                    // requests for files, by path
	behavior func(w http.ResponseWriter, r *http.Request) bool // true: handled
}

type file struct {
	ctype string
	body  []byte
}

// NewFakeMint serves info over a complete default (a bolt11 sat mint
// named nowhere); it stops when the test ends.
func NewFakeMint(t testing.TB, info map[string]any) *FakeMint {
	f := &FakeMint{files: map[string]file{}, hits: map[string]int{}, info: map[string]any{
		"pubkey": "02a9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba2", "version": "fake/1.0", "description": "a fake mint",
		"contact": []any{map[string]any{"method": "email", "info": "op@example.com"}},
		"time":    1700000000,
		"nuts": map[string]any{
			"4":  map[string]any{"methods": []any{map[string]any{"method": "bolt11", "unit": "sat", "min_amount": 1, "max_amount": 100000}}, "disabled": false},
			"5":  map[string]any{"methods": []any{map[string]any{"method": "bolt11", "unit": "sat"}}, "disabled": false},
			"7":  map[string]any{"supported": true},
			"8":  map[string]any{"supported": false},
			"17": map[string]any{"supported": []any{map[string]any{"method": "bolt11", "unit": "sat", "commands": []any{"bolt11_mint_quote"}}}},
		},
	}}
	for k, v := range info {
		f.info[k] = v
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *FakeMint) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	b := f.behavior
	info, _ := json.Marshal(f.info)
	file, isFile := f.files[r.URL.Path]
	if isFile {
		f.hits[r.URL.Path]++
	}
	f.mu.Unlock()
	if b != nil && b(w, r) {
		return
	}
	switch {
	case r.URL.Path == "/v1/info":
		w.Header().Set("Content-Type", "application/json")
		w.Write(info)
	case r.URL.Path == "/v1/keysets":
		fmt.Fprint(w, `{"keysets":[{"id":"009a1f293253e41e","unit":"sat","active":true,"input_fee_ppk":100}]}`)
	case isFile:
		w.Header().Set("Content-Type", file.ctype)
		w.Write(file.body)
	default:
		http.NotFound(w, r)
	}
}

// Set sets one field of the info document.
func (f *FakeMint) Set(k string, v any) { f.mu.Lock(); f.info[k] = v; f.mu.Unlock() }

// Misbehave answers requests with b first, until b returns false; nil
// makes the mint behave again.
func (f *FakeMint) Misbehave(b func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	f.behavior = b
	f.mu.Unlock()
}

// Fail is a misbehaviour: every request answered with status.
func Fail(status int) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool { http.Error(w, "down", status); return true }
}

// Serve serves body at path and returns its URL.
func (f *FakeMint) Serve(path, ctype string, body []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = file{ctype, body}
	return f.URL + path
}

// Hits is how often the file at path was asked for.
func (f *FakeMint) Hits(path string) int { f.mu.Lock(); defer f.mu.Unlock(); return f.hits[path] }
