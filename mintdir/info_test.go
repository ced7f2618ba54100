package mintdir

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseInfoIsTolerant(t *testing.T) {
	t.Parallel()
	body := `{
		"name": "  Legacy Mint ", "pubkey": "` + pk1 + `", "version": "Nutshell/0.15.0",
		"description": 42, "description_long": null, "motd": "hi",
		"contact": [["email", "a@b.c"], ["nostr", "npub1xyz"], {"method": "twitter", "info": "@mint"}, ["bad"]],
		"urls": ["https://mint.example", 7, ""], "time": 1731000000.0, "tos_url": "https://mint.example/tos",
		"nuts": {
			"4": {"methods": [["bolt11", "sat"]], "disabled": false},
			"5": {"methods": [{"method": "bolt11", "unit": "sat", "options": {"max_amount": 50000}}]},
			"7": {"supported": true}, "8": {"supported": false}, "9": true,
			"17": {"supported": [{"method": "bolt11", "unit": "sat", "commands": ["bolt11_melt_quote"]}]},
			"15": [{"method": "bolt11", "unit": "sat"}]
		}
	}`
	in, err := ParseInfo([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "Legacy Mint" || in.Description != "" || in.Time != 1731000000 || in.TosURL == "" || len(in.URLs) != 1 {
		t.Fatalf("info = %+v", in)
	}
	wantContacts := []Contact{{"email", "a@b.c"}, {"nostr", "npub1xyz"}, {"twitter", "@mint"}}
	if !reflect.DeepEqual(in.Contact, wantContacts) {
		t.Fatalf("contacts = %v", in.Contact)
	}
	f := in.Features()
	if !reflect.DeepEqual(f.SupportedNuts, []int{4, 5, 7, 17}) {
		t.Errorf("supported nuts = %v", f.SupportedNuts)
	}
	if !f.SupportsBolt11 || f.MinAmount != nil || f.MaxAmount != nil || f.MintingDisabled {
		t.Errorf("legacy nut 4 pairs: %+v", f)
	}

	// Modern form: limits on the NUT-04 method; NUT-05 disabled.
	in2, _ := ParseInfo([]byte(`{"pubkey":"x","nuts":{"4":{"methods":[{"method":"bolt11","unit":"sat","min_amount":10,"max_amount":5000}]},
		"5":{"methods":[{"method":"bolt11","unit":"sat"}],"disabled":true}}}`))
	f2 := in2.Features()
	if f2.SupportsBolt11 || !f2.MintingDisabled || f2.MinAmount == nil || *f2.MinAmount != 10 || *f2.MaxAmount != 5000 {
		t.Errorf("modern form: %+v", f2)
	}
	for _, bad := range []string{`[]`, `"x"`, `{}`, `{"name":"no pubkey, no nuts"}`} {
		if _, err := ParseInfo([]byte(bad)); err == nil {
			t.Errorf("ParseInfo(%s) passed", bad)
		}
	}
}

func TestFeatureCompleteness(t *testing.T) {
	t.Parallel()
	full := Info{Name: "n", Pubkey: "p", Version: "v", Description: "d", DescriptionLong: "dl", Motd: "m", IconURL: "i",
		TosURL: "t", Contact: []Contact{{"email", "x"}}, URLs: []string{"u"}, Nuts: map[string]any{}}
	for _, n := range optionalNuts {
		full.Nuts[itoa(n)] = map[string]any{"supported": true}
	}
	if got := full.Features().Completeness; got != 1 {
		t.Errorf("full info: %v, want 1", got)
	}
	// 3 fields (name, pubkey, version) and 2 NUTs (7, 12) of 10 + 13.
	half := Info{Name: "n", Pubkey: "p", Version: "v", Nuts: map[string]any{"7": map[string]any{"supported": true}, "12": map[string]any{"supported": true}, "99": map[string]any{"supported": true}}}
	if got := half.Features().Completeness; got != 0.22 {
		t.Errorf("partial info: %v, want 0.22 (5/23)", got)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestDiffAndChangeTypes(t *testing.T) {
	t.Parallel()
	base := Info{Name: "A", Pubkey: pk1, Version: "1", Nuts: map[string]any{"4": map[string]any{"disabled": false}}, URLs: []string{"https://a"}}
	if ct, diff := Diff(nil, base); ct != ChangeInitial || diff["name"].New == nil || diff["name"].Old != nil {
		t.Errorf("initial: %s %v", ct, diff)
	}
	tests := []struct {
		change func(*Info)
		want   string
		field  string
	}{
		{func(i *Info) { i.Name = "B" }, ChangeInfo, "name"},
		{func(i *Info) { i.Version = "2" }, ChangeVersion, "version"},
		{func(i *Info) { i.Pubkey = pk2; i.Name = "B" }, ChangePubkey, "pubkey"},
		{func(i *Info) { i.Nuts = map[string]any{"4": map[string]any{"disabled": true}} }, ChangeNuts, "nuts.4"},
		{func(i *Info) { i.URLs = []string{"https://a", "https://b"} }, ChangeURLs, "urls"},
	}
	for _, tt := range tests {
		next := base
		tt.change(&next)
		ct, diff := Diff(&base, next)
		if ct != tt.want || len(diff) == 0 {
			t.Errorf("%s: change type %q diff %v", tt.want, ct, diff)
		}
		if _, ok := diff[tt.field]; !ok {
			t.Errorf("%s: diff %v lacks %s", tt.want, diff, tt.field)
		}
	}
	// The mint's clock is not content.
	later := base
	later.Time = 1800000000
	if base.Hash() != later.Hash() {
		t.Error("hash depends on the mint's time")
	}
}
