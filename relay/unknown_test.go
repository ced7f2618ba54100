package relay_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// An event with top-level fields NIP-01 does not name ("seenOn", left in by
// some client libraries) is accepted, as strfry does, and stored and served
// without them: the id covers only NIP-01's fields.
func TestUnknownEventFieldsIgnored(t *testing.T) {
	e := newEnv(t)
	w := dialWire(t, e.url, 0)
	sk, _ := newKey()
	ev := sign(t, sk, 1, "from a client that keeps seenOn")
	raw, _ := json.Marshal(ev)
	extra := map[string]string{
		"trailing":    `,"seenOn":["wss://relay.example"]}`,
		"nested":      `,"meta":{"a":[1,{"b":null}],"c":"}"},"x":1.5}`,
		"first, null": ``,
	}
	for name, tail := range extra {
		t.Run(name, func(t *testing.T) {
			ev := sign(t, sk, 1, "from a client that keeps seenOn: "+name)
			raw, _ := json.Marshal(ev)
			msg := string(raw[:len(raw)-1]) + tail
			if tail == "" {
				msg = `{"_seen":null,` + string(raw[1:])
			}
			w.sendRaw(`["EVENT",` + msg + `]`)
			m := w.expect("OK")
			if m.str(1) != ev.ID || string(m.parts[2]) != "true" {
				t.Fatalf("got %s, want OK true", m)
			}
			w.send("REQ", "s", map[string]any{"ids": []string{ev.ID}})
			got := w.expect("EVENT")
			var fields map[string]any
			if json.Unmarshal(got.parts[2], &fields); len(fields) != 7 {
				t.Fatalf("served with other fields than NIP-01's: %s", got.parts[2])
			}
			w.expect("EOSE")
			w.send("CLOSE", "s")
		})
	}
	// A malformed known field is still refused.
	bad := strings.Replace(string(raw), `"kind":1`, `"kind":"one"`, 1)
	w.sendRaw(`["EVENT",` + strings.TrimSuffix(bad, "}") + `,"seenOn":[]}]`)
	if m := w.expect("OK"); m.str(1) != ev.ID || !strings.HasPrefix(m.str(3), "invalid:") {
		t.Fatalf("a malformed kind with an unknown field: %s", m)
	}
}
