package nutshelltest

import (
	"encoding/json"
	"net/http"
	"testing"
)

type keysets struct {
	Keysets []struct {
		ID     string `json:"id"`
		Active bool   `json:"active"`
		Fee    int    `json:"input_fee_ppk"`
	} `json:"keysets"`
}

func getKeysets(t *testing.T, url string) keysets {
	t.Helper()
	resp, err := http.Get(url + "/v1/keysets")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ks keysets
	if err := json.NewDecoder(resp.Body).Decode(&ks); err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestStartRestartRotate: a mint starts on 127.0.0.1 with a v2 keyset and
// the default input fee, restarts at its URL, and a retired keyset stays
// known but inactive next to the new one.
func TestStartRestartRotate(t *testing.T) {
	m := StartT(t, Options{})
	ks := getKeysets(t, m.URL)
	if len(ks.Keysets) != 1 || len(ks.Keysets[0].ID) != 66 || ks.Keysets[0].ID[:2] != "01" || ks.Keysets[0].Fee != 100 || !ks.Keysets[0].Active {
		t.Fatalf("keysets %+v", ks)
	}
	old := ks.Keysets[0].ID
	m.Stop()
	if err := SetKeysetActive(m.Dir, old, false); err != nil {
		t.Fatal(err)
	}
	m2 := StartT(t, Options{Dir: m.Dir, Port: m.Port, Env: []string{"MINT_DERIVATION_PATH=m/0'/0'/1'"}})
	if m2.URL != m.URL {
		t.Fatalf("restarted at %s, was %s", m2.URL, m.URL)
	}
	ks = getKeysets(t, m2.URL)
	states := map[string]bool{}
	for _, k := range ks.Keysets {
		states[k.ID] = k.Active
	}
	if len(states) != 2 || states[old] {
		t.Fatalf("after rotation %+v", ks)
	}
}
