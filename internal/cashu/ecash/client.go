package ecash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/elnosh/gonuts/cashu"
)

// client speaks the mint's HTTP API (NUT-01..09). Every call has a deadline.
type client struct {
	mint    string
	http    *http.Client
	timeout time.Duration // per request
	long    time.Duration // per melt request, which waits for Lightning
}

const maxResponse = 8 << 20

func (c *client) do(ctx context.Context, method, path string, in, out any) error {
	timeout := c.timeout
	if path == "/v1/melt/bolt11" {
		timeout = c.long
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.mint+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var oe *net.OpError
		notSent := errors.As(err, &oe) && oe.Op == "dial"
		return &MintError{Problem: Unreachable, Mint: c.mint, Path: path, NotSent: notSent, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return &MintError{Problem: Unreachable, Mint: c.mint, Path: path, Status: resp.StatusCode, Err: err}
	}
	if len(data) > maxResponse {
		return incompatible(c.mint, path, "the answer is larger than %d bytes", maxResponse)
	}
	if resp.StatusCode == http.StatusOK {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			// JSON cut short or garbled on its way is a passing fault; an
			// answer that is no JSON at all (a web page) is not a mint's.
			p := Incompatible
			if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
				p = Faulty
			}
			return &MintError{Problem: p, Mint: c.mint, Path: path, Status: resp.StatusCode,
				Detail: "the answer is not the JSON the protocol describes", Err: err}
		}
		return nil
	}
	return c.answerError(path, resp.StatusCode, data)
}

// answerError is the MintError of an answer other than 200.
func (c *client) answerError(path string, status int, data []byte) *MintError {
	e := &MintError{Mint: c.mint, Path: path, Status: status}
	var ce struct {
		Detail json.RawMessage `json:"detail"`
		Code   int             `json:"code"`
	}
	cashuError := false
	if json.Unmarshal(data, &ce) == nil && len(ce.Detail) > 0 {
		e.Code = ce.Code
		var s string
		if json.Unmarshal(ce.Detail, &s) == nil {
			e.Detail, cashuError = s, true
		} else {
			e.Detail = string(ce.Detail)
		}
	}
	if e.Detail == "" {
		e.Detail = truncate(string(data), 200)
	}
	switch {
	case status == http.StatusBadRequest && cashuError:
		// NUT-00's error answer; code 0 (or none) is a mint's own failure,
		// e.g. Nutshell's "failed to acquire database lock".
		e.Problem = Refused
	case status == http.StatusTooManyRequests || status >= 500:
		e.Problem = Unreachable
	default:
		// 404 for a route it lacks, 422 for a request it cannot parse, or a
		// 400 without a Cashu error: not the protocol we speak.
		e.Problem = Incompatible
	}
	return e
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// --- NUT-06 ---

type mintInfo struct {
	Name    string                     `json:"name"`
	Version string                     `json:"version"`
	Nuts    map[string]json.RawMessage `json:"nuts"`
}

// supports reports whether NUT n is advertised as {"supported": true}.
func (i mintInfo) supports(n int) bool {
	var s struct {
		Supported bool `json:"supported"`
	}
	return json.Unmarshal(i.Nuts[strconv.Itoa(n)], &s) == nil && s.Supported
}

func (c *client) info(ctx context.Context) (mintInfo, error) {
	var i mintInfo
	return i, c.do(ctx, http.MethodGet, "/v1/info", nil, &i)
}

// --- NUT-01/02 ---

type keysetInfo struct {
	ID          string `json:"id"`
	Unit        string `json:"unit"`
	Active      *bool  `json:"active"`
	InputFeePpk *int64 `json:"input_fee_ppk"`
	FinalExpiry *int64 `json:"final_expiry"`
}

func (c *client) keysets(ctx context.Context) ([]keysetInfo, error) {
	var r struct {
		Keysets []keysetInfo `json:"keysets"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/keysets", nil, &r); err != nil {
		return nil, err
	}
	return r.Keysets, nil
}

// keys fetches one keyset's keys (NUT-01 GET /v1/keys/{id}).
func (c *client) keys(ctx context.Context, id string) (map[uint64]string, error) {
	path := "/v1/keys/" + url.PathEscape(id)
	var r struct {
		Keysets []struct {
			ID   string            `json:"id"`
			Keys map[string]string `json:"keys"`
		} `json:"keysets"`
	}
	if err := c.do(ctx, http.MethodGet, path, nil, &r); err != nil {
		return nil, err
	}
	for _, k := range r.Keysets {
		if k.ID != id {
			continue
		}
		out := make(map[uint64]string, len(k.Keys))
		for a, key := range k.Keys {
			n, err := strconv.ParseUint(a, 10, 64)
			if err != nil {
				return nil, incompatible(c.mint, path, "the amount %q of keyset %s is not a number", a, id)
			}
			out[n] = key
		}
		return out, nil
	}
	return nil, incompatible(c.mint, path, "the answer does not hold keyset %s", id)
}

// --- NUT-04 ---

// MintQuote is a mint's invoice for minting ecash (NUT-04/23).
type MintQuote struct {
	Quote   string `json:"quote"`
	Request string `json:"request"`
	Amount  uint64 `json:"amount"`
	State   string `json:"state"` // UNPAID, PAID, ISSUED
	Expiry  *int64 `json:"expiry"`
}

func (c *client) mintQuote(ctx context.Context, amount uint64) (MintQuote, error) {
	var q MintQuote
	err := c.do(ctx, http.MethodPost, "/v1/mint/quote/bolt11", map[string]any{"amount": amount, "unit": "sat"}, &q)
	if err == nil && (q.Quote == "" || q.Request == "") {
		err = incompatible(c.mint, "/v1/mint/quote/bolt11", "the quote has no id or no invoice")
	}
	return q, err
}

func (c *client) mintQuoteState(ctx context.Context, id string) (MintQuote, error) {
	var q MintQuote
	return q, c.do(ctx, http.MethodGet, "/v1/mint/quote/bolt11/"+url.PathEscape(id), nil, &q)
}

type signatures struct {
	Signatures cashu.BlindedSignatures `json:"signatures"`
}

func (c *client) mintTokens(ctx context.Context, quote string, outputs cashu.BlindedMessages) (cashu.BlindedSignatures, error) {
	var r signatures
	err := c.do(ctx, http.MethodPost, "/v1/mint/bolt11", map[string]any{"quote": quote, "outputs": outputs}, &r)
	return r.Signatures, err
}

// --- NUT-03 ---

// bare strips what mints do not need to see (DLEQ proofs) from inputs.
func bare(proofs cashu.Proofs) cashu.Proofs {
	out := make(cashu.Proofs, len(proofs))
	for i, p := range proofs {
		out[i] = cashu.Proof{Amount: p.Amount, Id: p.Id, Secret: p.Secret, C: p.C, Witness: p.Witness}
	}
	return out
}

func (c *client) swap(ctx context.Context, inputs cashu.Proofs, outputs cashu.BlindedMessages) (cashu.BlindedSignatures, error) {
	var r signatures
	err := c.do(ctx, http.MethodPost, "/v1/swap", map[string]any{"inputs": bare(inputs), "outputs": outputs}, &r)
	return r.Signatures, err
}

// --- NUT-05/08 ---

// MeltQuote is a mint's offer to pay an invoice (NUT-05/23), and its state.
type MeltQuote struct {
	Quote      string                  `json:"quote"`
	Request    string                  `json:"request"`
	Amount     uint64                  `json:"amount"`
	FeeReserve uint64                  `json:"fee_reserve"`
	State      string                  `json:"state"` // UNPAID, PENDING, PAID
	Expiry     *int64                  `json:"expiry"`
	Preimage   *string                 `json:"payment_preimage"`
	Change     cashu.BlindedSignatures `json:"change"`
}

func (c *client) meltQuote(ctx context.Context, invoice string) (MeltQuote, error) {
	var q MeltQuote
	err := c.do(ctx, http.MethodPost, "/v1/melt/quote/bolt11", map[string]any{"request": invoice, "unit": "sat"}, &q)
	if err == nil && q.Quote == "" {
		err = incompatible(c.mint, "/v1/melt/quote/bolt11", "the quote has no id")
	}
	return q, err
}

func (c *client) meltQuoteState(ctx context.Context, id string) (MeltQuote, error) {
	var q MeltQuote
	return q, c.do(ctx, http.MethodGet, "/v1/melt/quote/bolt11/"+url.PathEscape(id), nil, &q)
}

func (c *client) melt(ctx context.Context, quote string, inputs cashu.Proofs, outputs cashu.BlindedMessages) (MeltQuote, error) {
	body := map[string]any{"quote": quote, "inputs": bare(inputs)}
	if len(outputs) > 0 {
		body["outputs"] = outputs
	}
	var q MeltQuote
	return q, c.do(ctx, http.MethodPost, "/v1/melt/bolt11", body, &q)
}

// --- NUT-07 ---

// Proof states (NUT-07).
const (
	Unspent = "UNSPENT"
	Pending = "PENDING"
	Spent   = "SPENT"
)

// checkState returns the state of each Y, in order.
func (c *client) checkState(ctx context.Context, ys []string) ([]string, error) {
	out := make([]string, 0, len(ys))
	for len(ys) > 0 {
		batch := ys[:min(len(ys), 100)]
		ys = ys[len(batch):]
		var r struct {
			States []struct {
				Y     string `json:"Y"`
				State string `json:"state"`
			} `json:"states"`
		}
		if err := c.do(ctx, http.MethodPost, "/v1/checkstate", map[string]any{"Ys": batch}, &r); err != nil {
			return nil, err
		}
		byY := make(map[string]string, len(r.States))
		for _, s := range r.States {
			byY[s.Y] = s.State
		}
		for _, y := range batch {
			st := byY[y]
			if st != Unspent && st != Pending && st != Spent {
				return nil, incompatible(c.mint, "/v1/checkstate", "no known state for a proof (%q)", st)
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// --- NUT-09 ---

// restore asks the mint for the signatures it made on outputs; the answer
// holds only the outputs it signed, each with its signature.
func (c *client) restore(ctx context.Context, outputs cashu.BlindedMessages) (cashu.BlindedMessages, cashu.BlindedSignatures, error) {
	var r struct {
		Outputs    cashu.BlindedMessages   `json:"outputs"`
		Signatures cashu.BlindedSignatures `json:"signatures"`
		Promises   cashu.BlindedSignatures `json:"promises"` // Nutshell's older name
	}
	if err := c.do(ctx, http.MethodPost, "/v1/restore", map[string]any{"outputs": outputs}, &r); err != nil {
		return nil, nil, err
	}
	if len(r.Signatures) == 0 {
		r.Signatures = r.Promises
	}
	if len(r.Outputs) != len(r.Signatures) {
		return nil, nil, incompatible(c.mint, "/v1/restore", "%d outputs but %d signatures", len(r.Outputs), len(r.Signatures))
	}
	return r.Outputs, r.Signatures, nil
}
