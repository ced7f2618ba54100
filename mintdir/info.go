package mintdir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Info is a mint's NUT-06 info, parsed tolerantly: a field of an unexpected
// type is left empty rather than failing the whole document, because real
// mints ship many versions of the format.
type Info struct {
	Name            string         `json:"name"`
	Pubkey          string         `json:"pubkey"`
	Version         string         `json:"version"`
	Description     string         `json:"description"`
	DescriptionLong string         `json:"description_long"`
	Contact         []Contact      `json:"contact"`
	Motd            string         `json:"motd"`
	IconURL         string         `json:"icon_url"`
	URLs            []string       `json:"urls"`
	TosURL          string         `json:"tos_url"`
	Nuts            map[string]any `json:"nuts"` // NUT number → its settings, as served
	Time            int64          `json:"-"`    // the mint's clock; changes on every request, so not hashed
}

// Contact is one way to reach the operator.
type Contact struct {
	Method string `json:"method"`
	Info   string `json:"info"`
}

// ParseInfo parses a NUT-06 info body.
func ParseInfo(body []byte) (Info, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return Info{}, errors.New("the info is not a JSON object")
	}
	var in Info
	for name, dst := range map[string]*string{"name": &in.Name, "pubkey": &in.Pubkey, "version": &in.Version,
		"description": &in.Description, "description_long": &in.DescriptionLong, "motd": &in.Motd,
		"icon_url": &in.IconURL, "tos_url": &in.TosURL} {
		json.Unmarshal(raw[name], dst)
		*dst = strings.TrimSpace(*dst)
	}
	in.Contact = parseContacts(raw["contact"])
	var urls []any
	json.Unmarshal(raw["urls"], &urls)
	for _, u := range urls {
		if s, ok := u.(string); ok && strings.TrimSpace(s) != "" {
			in.URLs = append(in.URLs, strings.TrimSpace(s))
		}
	}
	var t float64
	if json.Unmarshal(raw["time"], &t) == nil && t > 0 && t < 1e11 { // seconds; anything larger is nonsense
		in.Time = int64(t)
	}
	dec := json.NewDecoder(bytes.NewReader(raw["nuts"]))
	dec.UseNumber()
	var nuts map[string]any
	if dec.Decode(&nuts) == nil && len(nuts) > 0 {
		in.Nuts = nuts
	}
	if in.Pubkey == "" && in.Nuts == nil {
		return in, errors.New("the info has neither a pubkey nor nuts")
	}
	return in, nil
}

// parseContacts reads contacts as objects ({"method", "info"}) or in the
// legacy form ([["email", "x@y"], ...]).
func parseContacts(raw json.RawMessage) []Contact {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []Contact
	for _, it := range items {
		var c Contact
		if json.Unmarshal(it, &c) != nil {
			var pair []any
			if json.Unmarshal(it, &pair) == nil && len(pair) >= 2 {
				c.Method, _ = pair[0].(string)
				c.Info, _ = pair[1].(string)
			}
		}
		c.Method, c.Info = strings.TrimSpace(c.Method), strings.TrimSpace(c.Info)
		if c.Method != "" && c.Info != "" {
			out = append(out, c)
		}
	}
	return out
}

// Hash identifies the content of the info, without the mint's clock: the
// history gets an entry only when it changes.
func (in Info) Hash() string {
	b, _ := json.Marshal(in) // map keys are sorted, so this is canonical
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Change is one changed field in a history entry's diff.
type Change struct {
	Old any `json:"old"`
	New any `json:"new"`
}

// Change types of history entries, most significant first.
const (
	ChangeInitial = "initial"
	ChangePubkey  = "pubkey_changed"
	ChangeVersion = "version_changed"
	ChangeNuts    = "nuts_changed"
	ChangeURLs    = "urls_changed"
	ChangeInfo    = "info_changed"
)

// Diff compares two infos field by field (nuts NUT by NUT, as "nuts.4") and
// names the most significant kind of change.
func Diff(old *Info, new Info) (changeType string, diff map[string]Change) {
	diff = map[string]Change{}
	var o Info
	if old != nil {
		o = *old
	}
	fields := []struct {
		name     string
		old, new any
	}{
		{"name", o.Name, new.Name}, {"pubkey", o.Pubkey, new.Pubkey}, {"version", o.Version, new.Version},
		{"description", o.Description, new.Description}, {"description_long", o.DescriptionLong, new.DescriptionLong},
		{"contact", o.Contact, new.Contact}, {"motd", o.Motd, new.Motd}, {"icon_url", o.IconURL, new.IconURL},
		{"urls", o.URLs, new.URLs}, {"tos_url", o.TosURL, new.TosURL},
	}
	for _, f := range fields {
		if a, b := jsonOrNil(f.old), jsonOrNil(f.new); !bytes.Equal(a, b) {
			diff[f.name] = Change{Old: rawOrNil(a), New: rawOrNil(b)}
		}
	}
	for _, n := range unionKeys(o.Nuts, new.Nuts) {
		if a, b := jsonOrNil(o.Nuts[n]), jsonOrNil(new.Nuts[n]); !bytes.Equal(a, b) {
			diff["nuts."+n] = Change{Old: rawOrNil(a), New: rawOrNil(b)}
		}
	}
	switch {
	case old == nil:
		return ChangeInitial, diff
	case has(diff, "pubkey"):
		return ChangePubkey, diff
	case has(diff, "version"):
		return ChangeVersion, diff
	case hasPrefix(diff, "nuts."):
		return ChangeNuts, diff
	case has(diff, "urls"):
		return ChangeURLs, diff
	}
	return ChangeInfo, diff
}

// jsonOrNil encodes v, with empty strings, lists and maps as nil (absent).
func jsonOrNil(v any) []byte {
	b, _ := json.Marshal(v)
	switch string(b) {
	case `""`, "null", "[]", "{}":
		return nil
	}
	return b
}

func rawOrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

func has(m map[string]Change, k string) bool { _, ok := m[k]; return ok }

func hasPrefix(m map[string]Change, p string) bool {
	for k := range m {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

func unionKeys(a, b map[string]any) []string {
	var ks []string
	for k := range a {
		ks = append(ks, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	sort.Slice(ks, func(i, j int) bool { return nutLess(ks[i], ks[j]) })
	return ks
}

func nutLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// --- derived features ---

// Features are what the directory derives from a mint's info.
type Features struct {
	SupportedNuts   []int   `json:"supported_nuts"`
	SupportsBolt11  bool    `json:"supports_bolt11"`
	MinAmount       *uint64 `json:"min_amount"`
	MaxAmount       *uint64 `json:"max_amount"`
	MintingDisabled bool    `json:"minting_disabled"` // NUT-04 or NUT-05 disabled: degraded
	Completeness    float64 `json:"feature_completeness_score"`
}

// optionalNuts are the mint-side NUTs counted by the completeness score.
var optionalNuts = []int{4, 5, 7, 8, 9, 10, 11, 12, 14, 15, 17, 19, 20}

// Features derives the feature flags and the completeness score.
//
//	completeness = (optional info fields present + optional NUTs supported)
//	               / (10 + 13)
//
// with the fields name, pubkey, version, description, description_long,
// contact, motd, icon_url, urls, tos_url and the NUTs 4, 5, 7, 8, 9, 10, 11,
// 12, 14, 15, 17, 19, 20.
func (in Info) Features() Features {
	f := Features{SupportedNuts: []int{}}
	for k, v := range in.Nuts {
		n, err := strconv.Atoi(k)
		if err == nil && n >= 0 && nutSupported(v) {
			f.SupportedNuts = append(f.SupportedNuts, n)
		}
	}
	sort.Ints(f.SupportedNuts)

	mint, mintOK := bolt11(in.Nuts["4"])
	melt, meltOK := bolt11(in.Nuts["5"])
	f.SupportsBolt11 = mintOK && meltOK && !disabled(in.Nuts["4"]) && !disabled(in.Nuts["5"])
	f.MintingDisabled = disabled(in.Nuts["4"]) || disabled(in.Nuts["5"])
	if mintOK {
		f.MinAmount, f.MaxAmount = mint.min, mint.max
	} else if meltOK {
		f.MinAmount, f.MaxAmount = melt.min, melt.max
	}

	present := 0
	for _, s := range []string{in.Name, in.Pubkey, in.Version, in.Description, in.DescriptionLong, in.Motd, in.IconURL, in.TosURL} {
		if s != "" {
			present++
		}
	}
	if len(in.Contact) > 0 {
		present++
	}
	if len(in.URLs) > 0 {
		present++
	}
	supported := map[int]bool{}
	for _, n := range f.SupportedNuts {
		supported[n] = true
	}
	for _, n := range optionalNuts {
		if supported[n] {
			present++
		}
	}
	f.Completeness = math.Round(float64(present)/float64(10+len(optionalNuts))*100) / 100
	return f
}

// nutSupported: {"supported": true}, {"supported": [...]} (NUT-17) or
// {"methods": [...]} with at least one method.
func nutSupported(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	switch s := m["supported"].(type) {
	case bool:
		if s {
			return true
		}
	case []any:
		if len(s) > 0 {
			return true
		}
	}
	methods, _ := m["methods"].([]any)
	return len(methods) > 0
}

func disabled(v any) bool {
	m, _ := v.(map[string]any)
	d, _ := m["disabled"].(bool)
	return d
}

type limits struct{ min, max *uint64 }

// bolt11 finds the bolt11/sat method of a NUT-04/05 setting. Methods are
// objects ({"method", "unit", "min_amount", ...}, limits possibly nested in
// "options") or the legacy pairs ["bolt11", "sat"].
func bolt11(v any) (limits, bool) {
	m, _ := v.(map[string]any)
	methods, _ := m["methods"].([]any)
	for _, it := range methods {
		switch x := it.(type) {
		case []any:
			if len(x) >= 2 && x[0] == "bolt11" && x[1] == "sat" {
				return limits{}, true
			}
		case map[string]any:
			if x["method"] != "bolt11" || (x["unit"] != "sat" && x["unit"] != nil) {
				continue
			}
			l := limits{min: amount(x["min_amount"]), max: amount(x["max_amount"])}
			if opts, ok := x["options"].(map[string]any); ok {
				if l.min == nil {
					l.min = amount(opts["min_amount"])
				}
				if l.max == nil {
					l.max = amount(opts["max_amount"])
				}
			}
			return l, true
		}
	}
	return limits{}, false
}

// amount reads a positive integer amount; 0 and absent both mean unstated.
func amount(v any) *uint64 {
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	i, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil || i == 0 {
		return nil
	}
	return &i
}
