package ecash

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/elnosh/gonuts/cashu"
	"github.com/elnosh/gonuts/cashu/nuts/nut12"
	"github.com/tyler-smith/go-bip39"
)

// The test vectors of cashubtc/nuts (tests/02-, 12- and 13-tests.md).

func keys(t *testing.T, m map[string]string) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	for a, k := range m {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = k
	}
	return out
}

func keys64(t *testing.T) map[uint64]string {
	t.Helper()
	b, err := os.ReadFile("testdata/keys64.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return keys(t, m)
}

var keys4 = map[string]string{
	"1": "03a40f20667ed53513075dc51e715ff2046cad64eb68960632269ba7f0210e38bc",
	"2": "03fd4ce5a16b65576145949e6f99f445f8249fee17c606b688b504a849cdc452de",
	"4": "02648eccfa4c026960966276fa5a4cae46ce0fd432211a4f449bf84f13aa5f8303",
	"8": "02fdfd6796bfeac490cbee12f778f867f0a2c68f6508d17c649759ea0dc3547528",
}

func TestKeysetIDs(t *testing.T) {
	t.Parallel()
	expiry := int64(2059210353)
	for _, c := range []struct {
		name string
		ks   Keyset
	}{
		{"v1, 4 keys", Keyset{ID: "00456a94ab4e1c46", Unit: "sat", Keys: keys(t, keys4)}},
		{"v1, 64 keys", Keyset{ID: "000f01df73ea149a", Unit: "sat", Keys: keys64(t)}},
		{"v2 vector 1: fee and expiry", Keyset{ID: "015ba18a8adcd02e715a58358eb618da4a4b3791151a4bee5e968bb88406ccf76a", Unit: "sat", InputFeePpk: 100, FinalExpiry: &expiry, Keys: keys(t, keys4)}},
		{"v2 vector 2: expiry", Keyset{ID: "01ab6aa4ff30390da34986d84be5274b48ad7a74265d791095bfc39f4098d9764f", Unit: "sat", FinalExpiry: &expiry, Keys: keys64(t)}},
		{"v2 vector 3", Keyset{ID: "012fbb01a4e200c76df911eeba3b8fe1831202914b24664f4bccbd25852a6708f8", Unit: "sat", Keys: keys64(t)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := verifyKeyset(&c.ks); err != nil {
				t.Fatal(err)
			}
			// Any change to what the id commits to must be caught.
			bad := c.ks
			bad.Keys = map[uint64]string{}
			for a, k := range c.ks.Keys {
				bad.Keys[a] = k
			}
			bad.Keys[1], bad.Keys[2] = c.ks.Keys[2], c.ks.Keys[1]
			if verifyKeyset(&bad) == nil {
				t.Fatal("swapped keys verified")
			}
			if strings.HasPrefix(c.ks.ID, "01") {
				for _, mod := range []func(*Keyset){
					func(k *Keyset) { k.Unit = "usd" },
					func(k *Keyset) { k.InputFeePpk++ },
					func(k *Keyset) { k.FinalExpiry = nil; k.InputFeePpk = 7 },
				} {
					m := c.ks
					mod(&m)
					if verifyKeyset(&m) == nil {
						t.Fatal("a changed unit, fee or expiry verified")
					}
				}
			}
		})
	}
	for _, id := range []string{"", "02aa", "009a1f293253e41e00", "Zm9vYmFyYmF6cXV4"} {
		if verifyKeyset(&Keyset{ID: id, Unit: "sat", Keys: keys(t, keys4)}) == nil {
			t.Errorf("id %q verified", id)
		}
	}
}

const vectorMnemonic = "half depart obvious quality work element tank gorilla view sugar picture humble"

func TestDeterministicSecrets(t *testing.T) {
	t.Parallel()
	s, err := newSecrets(bip39.NewSeed(vectorMnemonic, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id      string
		secrets []string
		rs      []string
	}{
		{"009a1f293253e41e",
			[]string{"485875df74771877439ac06339e284c3acfcd9be7abf3bc20b516faeadfe77ae", "8f2b39e8e594a4056eb1e6dbb4b0c38ef13b1b2c751f64f810ec04ee35b77270",
				"bc628c79accd2364fd31511216a0fab62afd4a18ff77a20deded7b858c9860c8", "59284fd1650ea9fa17db2b3acf59ecd0f2d52ec3261dd4152785813ff27a33bf",
				"576c23393a8b31cc8da6688d9c9a96394ec74b40fdaf1f693a6bb84284334ea0"},
			[]string{"ad00d431add9c673e843d4c2bf9a778a5f402b985b8da2d5550bf39cda41d679", "967d5232515e10b81ff226ecf5a9e2e2aff92d66ebc3edf0987eb56357fd6248",
				"b20f47bb6ae083659f3aa986bfa0435c55c6d93f687d51a01f26862d9b9a4899", "fb5fca398eb0b1deb955a2988b5ac77d32956155f1c002a373535211a2dfdc29",
				"5f09bfbfe27c439a597719321e061e2e40aad4a36768bb2bcc3de547c9644bf9"}},
		{"015ba18a8adcd02e715a58358eb618da4a4b3791151a4bee5e968bb88406ccf76a",
			[]string{"db5561a07a6e6490f8dadeef5be4e92f7cebaecf2f245356b5b2a4ec40687298", "b70e7b10683da3bf1cdf0411206f8180c463faa16014663f39f2529b2fda922e",
				"78a7ac32ccecc6b83311c6081b89d84bb4128f5a0d0c5e1af081f301c7a513f5", "094a2b6c63bfa7970bc09cda0e1cfc9cd3d7c619b8e98fabcfc60aea9e4963e5",
				"5e89fc5d30d0bf307ddf0a3ac34aa7a8ee3702169dafa3d3fe1d0cae70ecd5ef"},
			[]string{"6d26181a3695e32e9f88b80f039ba1ae2ab5a200ad4ce9dbc72c6d3769f2b035", "bde4354cee75545bea1a2eee035a34f2d524cee2bb01613823636e998386952e",
				"f40cc1218f085b395c8e1e5aaa25dccc851be3c6c7526a0f4e57108f12d6dac4", "099ed70fc2f7ac769bc20b2a75cb662e80779827b7cc358981318643030577d0",
				"5550337312d223ba62e3f75cfe2ab70477b046d98e3e71804eade3956c7b98cf"}},
	} {
		for i := range c.secrets {
			secret, r, err := s.derive(c.id, uint32(i))
			if err != nil {
				t.Fatal(err)
			}
			if secret != c.secrets[i] || hex.EncodeToString(r.Serialize()) != c.rs[i] {
				t.Errorf("%s counter %d: secret %s r %x", c.id[:8], i, secret, r.Serialize())
			}
		}
	}
	if v1Index("009a1f293253e41e") != 864559728 {
		t.Errorf("keyset_id_int %d", v1Index("009a1f293253e41e"))
	}
}

func TestDLEQ(t *testing.T) {
	t.Parallel()
	A := mustKey(t, "0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")
	sig := cashu.DLEQProof{E: "9818e061ee51d5c8edc3342369a554998ff7b4381c8652d724cdf46429be73d9", S: "9818e061ee51d5c8edc3342369a554998ff7b4381c8652d724cdf46429be73da"}
	B := "02a9acc1e48c25eeeb9289b5031cc57da9fe72f3fe2861d264bdc074209b107ba2"
	if !nut12.VerifyBlindSignatureDLEQ(sig, A, B, B) {
		t.Fatal("valid blind signature DLEQ refused")
	}
	sig.S = sig.E
	if nut12.VerifyBlindSignatureDLEQ(sig, A, B, B) {
		t.Fatal("a wrong s verified")
	}
	p := cashu.Proof{Amount: 1, Id: "00882760bfa2eb41", Secret: "daf4dd00a2b68a0858a80450f52c8a7d2ccf87d375e43e216e0c571f089f63e9",
		C: "024369d2d22a80ecf78f3937da9d5f30c1b9f74f0c32684d583cca0fa6a61cdcfc",
		DLEQ: &cashu.DLEQProof{E: "b31e58ac6527f34975ffab13e70a48b6d2b0d35abc4b03f0151f09ee1a9763d4",
			S: "8fbae004c59e754d71df67e392b6ae4e29293113ddc2ec86592a0431d16306d8",
			R: "a6d13fcd7a18442e6076f5e1e7c887ad5de40a019824bdfa9fe740d302e8d861"}}
	if !nut12.VerifyProofDLEQ(p, A) {
		t.Fatal("valid proof DLEQ refused")
	}
	p.Secret = strings.Replace(p.Secret, "d", "e", 1)
	if nut12.VerifyProofDLEQ(p, A) {
		t.Fatal("a proof with another secret verified")
	}
}

func TestFeesAndSplits(t *testing.T) {
	t.Parallel()
	if fee(repeat(100, 10)) != 1 || fee(repeat(100, 11)) != 2 || fee(nil) != 0 || fee([]uint64{0, 0}) != 0 {
		t.Fatal("fee rounding")
	}
	for over, n := range map[uint64]int{0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 1000: 10} {
		if got := len(blanks(over)); got != n {
			t.Errorf("blanks(%d) = %d, want %d (NUT-08)", over, got, n)
		}
	}
	// The receiver nets exactly the amount at every fee level (issue #24:
	// 21 at 1 sat a proof is 8+8+8, not 16+8+1).
	for _, ppk := range []uint64{0, 100, 1000} {
		ks := &Keyset{ID: "00456a94ab4e1c46", InputFeePpk: ppk, Keys: keys64(t)}
		for amount := uint64(1); amount <= 5000; amount++ {
			parts, f, ok := ks.sendSplit(amount)
			var sum uint64
			for _, p := range parts {
				sum += p
			}
			if !ok || f != fee(repeat(ppk, len(parts))) || sum-f != amount {
				t.Fatalf("ppk %d: sendSplit(%d) = %v fee %d (sum %d)", ppk, amount, parts, f, sum)
			}
		}
	}
	ks := &Keyset{ID: "00456a94ab4e1c46", InputFeePpk: 1000, Keys: keys64(t)}
	if parts, f, _ := ks.sendSplit(21); !slices.Equal(parts, []uint64{8, 8, 8}) || f != 3 {
		t.Errorf("sendSplit(21) at 1000 ppk = %v fee %d, want [8 8 8] fee 3", parts, f)
	}
	if parts, f, _ := ks.sendSplit(100); len(parts) != 4 || f != 4 {
		t.Errorf("sendSplit(100) at 1000 ppk = %v fee %d, want 4 proofs worth 104", parts, f)
	}
	small := &Keyset{ID: "00456a94ab4e1c46", Keys: keys(t, keys4)}
	if parts, ok := small.split(21); !ok || len(parts) != 4 {
		t.Errorf("split(21) with keys up to 8: %v %v", parts, ok)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	proofs := cashu.Proofs{
		{Amount: 2, Id: "015ba18a8adcd02e715a58358eb618da4a4b3791151a4bee5e968bb88406ccf76a", Secret: "s1", C: "02bc9097997d81afb2cc7346b5e4345a9346bd2a506eb7958598a72f0cf85163ea"},
		{Amount: 8, Id: "009a1f293253e41e", Secret: "s2", C: "029e8e5050b890a7d6c0968db16bc1d5d5fa040ea1de284f6ec69d61299f671059",
			DLEQ: &cashu.DLEQProof{E: "aa", S: "bb", R: "cc"}},
	}
	tok := Token{Mint: "http://127.0.0.1:3338", Proofs: proofs}
	b, err := tok.Encode(false)
	if err != nil || !strings.HasPrefix(b, "cashuB") {
		t.Fatal(b, err)
	}
	got, err := DecodeToken("cashu:" + b)
	if err != nil || got.Mint != tok.Mint || got.Unit != "sat" || len(got.Proofs) != 2 {
		t.Fatalf("%+v %v", got, err)
	}
	ids := map[string]bool{}
	for _, p := range got.Proofs {
		ids[p.Id] = true
		if p.Amount == 8 && (p.DLEQ == nil || p.DLEQ.R != "cc") {
			t.Fatalf("DLEQ lost: %+v", p)
		}
	}
	if !ids["015ba18a8adcd02e"] || !ids["009a1f293253e41e"] {
		t.Fatalf("cashuB keyset ids %v, want short ones", ids)
	}
	a, err := tok.Encode(true)
	if err != nil || !strings.HasPrefix(a, "cashuA") {
		t.Fatal(a, err)
	}
	got, err = DecodeToken(a)
	if err != nil || got.Proofs[0].Id != proofs[0].Id {
		t.Fatalf("cashuA %+v %v", got, err)
	}
	// The spec's own V4 example, with short v1 ids.
	spec := "cashuBo2F0gqJhaUgA_9SLj17PgGFwgaNhYQFhc3hAYWNjMTI0MzVlN2I4NDg0YzNjZjE4NTAxNDkyMThhZjkwZjcxNmE1MmJmNGE1ZWQzNDdlNDhlY2MxM2Y3NzM4OGFjWCECRFODGd5IXVW-07KaZCvuWHk3WrnnpiDhHki6SCQh88-iYWlIAK0mjE0fWCZhcIKjYWECYXN4QDEzMjNkM2Q0NzA3YTU4YWQyZTIzYWRhNGU5ZjFmNDlmNWE1YjRhYzdiNzA4ZWIwZDYxZjczOGY0ODMwN2U4ZWVhY1ghAjRWqhENhLSsdHrr2Cw7AFrKUL9Ffr1XN6RBT6w659lNo2FhAWFzeEA1NmJjYmNiYjdjYzY0MDZiM2ZhNWQ1N2QyMTc0ZjRlZmY4YjQ0MDJiMTc2OTI2ZDNhNTdkM2MzZGNiYjU5ZDU3YWNYIQJzEpxXGeWZN5qXSmJjY8MzxWyvwObQGr5G1YCCgHicY2FtdWh0dHA6Ly9sb2NhbGhvc3Q6MzMzOGF1Y3NhdA"
	got, err = DecodeToken(spec)
	if err != nil || got.Mint != "http://localhost:3338" || len(got.Proofs) != 3 || got.Proofs.Amount() != 4 {
		t.Fatalf("spec token: %+v %v", got, err)
	}
	for _, bad := range []string{"", "cashu", "cashuA", "cashuB", "cashuC" + b[6:], "cashuBgarbage!!", "cashuA" + b[6:]} {
		if _, err := DecodeToken(bad); err == nil {
			t.Errorf("DecodeToken(%.20q) accepted", bad)
		}
	}
}

func mustKey(t *testing.T, h string) *secp256k1.PublicKey {
	t.Helper()
	b, _ := hex.DecodeString(h)
	k, err := secp256k1.ParsePubKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
