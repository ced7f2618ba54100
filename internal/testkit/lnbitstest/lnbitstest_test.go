package lnbitstest_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elnosh/gonuts/mint/lightning"
	"github.com/outpost-relay/outpost/internal/cashu/devmint"
	"github.com/outpost-relay/outpost/internal/testkit/lnbitstest"
)

func call(ctx context.Context, t *testing.T, s *lnbitstest.Server, method, path, key string, body any) (*http.Response, map[string]any) {
	t.Helper()
	var b bytes.Buffer
	if body != nil {
		json.NewEncoder(&b).Encode(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, s.URL+path, &b)
	req.Header.Set("X-Api-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, "/sse") {
		return res, nil
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res, out
}

// TestInvoicePaidAcrossTheNetwork: an invoice the server makes (as
// Nutshell asks for one) is paid by another node of the network: the
// stream of paid invoices tells its payment hash, and its status is paid
// with the preimage of that hash; a wrong key is refused.
func TestInvoicePaidAcrossTheNetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	network := &devmint.Network{}
	s := lnbitstest.Start(t, network)
	other, err := network.NewNode("")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if res, _ := call(ctx, t, s, "GET", "/api/v1/wallet", "wrong", nil); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %d", res.StatusCode)
	}
	stream, _ := call(ctx, t, s, "GET", "/api/v1/payments/sse", s.Key, nil)
	defer stream.Body.Close()
	res, inv := call(ctx, t, s, "POST", "/api/v1/payments", s.Key, map[string]any{"out": false, "amount": 21, "memo": "m"})
	hash, _ := inv["payment_hash"].(string)
	if res.StatusCode != http.StatusCreated || hash == "" {
		t.Fatalf("invoice: %d %v", res.StatusCode, inv)
	}
	if _, st := call(ctx, t, s, "GET", "/api/v1/payments/"+hash, s.Key, nil); st["paid"] != false {
		t.Fatalf("unpaid invoice status: %v", st)
	}
	if p, err := other.SendPayment(ctx, inv["payment_request"].(string), 0); err != nil || p.PaymentStatus != lightning.Succeeded {
		t.Fatalf("payment: %+v %v", p, err)
	}
	sc := bufio.NewScanner(stream.Body)
	for !strings.Contains(sc.Text(), hash) {
		if !sc.Scan() {
			t.Fatalf("the stream ended before telling the payment: %v", sc.Err())
		}
	}
	_, st := call(ctx, t, s, "GET", "/api/v1/payments/"+hash, s.Key, nil)
	pre, _ := hex.DecodeString(st["preimage"].(string))
	h := sha256.Sum256(pre)
	if st["paid"] != true || hex.EncodeToString(h[:]) != hash {
		t.Fatalf("paid invoice status: %v", st)
	}
}
