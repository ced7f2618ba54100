package relay

import (
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/mailru/easyjson"
	"github.com/nbd-wtf/go-nostr"
	"github.com/tidwall/gjson"
)

// Parsing of client messages. go-nostr's envelopes keep one filter of a
// COUNT and fail a whole REQ on its first bad filter without saying which
// subscription it was, so the relay splits messages itself and decodes only
// events and filters with go-nostr's (easyjson) decoders.

// message is a client message split into its elements.
type message []gjson.Result

// parseMessage splits msg, which stays referenced by the result.
func parseMessage(msg []byte) (label string, m message, reason string) {
	s := unsafe.String(unsafe.SliceData(msg), len(msg))
	if !gjson.Valid(s) {
		return "", nil, "invalid: the message is not JSON"
	}
	r := gjson.Parse(s)
	if !r.IsArray() {
		return "", nil, "invalid: a message is a JSON array"
	}
	m = r.Array()
	if len(m) == 0 || m[0].Type != gjson.String {
		return "", nil, "invalid: a message starts with its type, a string"
	}
	return m[0].Str, m, ""
}

// subID returns the subscription id in element 1. reason says why it is
// not acceptable; id is still set when it is a string, so the refusal can
// name it.
func (m message) subID() (id string, reason string) {
	if len(m) < 2 || m[1].Type != gjson.String {
		return "", "invalid: the subscription id must be a string"
	}
	// A copy: gjson's string points into the message, which a subscription
	// or NIP-77 session keeping its id would keep whole.
	id = strings.Clone(m[1].Str)
	if n := utf8.RuneCountInString(id); n < 1 || n > maxSubIDLength {
		return id, fmt.Sprintf("invalid: a subscription id has 1 to %d characters", maxSubIDLength)
	}
	return id, ""
}

// filters decodes the filters from element 2 on, at most max (0: any number).
func (m message) filters(max int) (nostr.Filters, string) {
	if len(m) < 3 {
		return nil, "invalid: no filter"
	}
	if max > 0 && len(m)-2 > max {
		return nil, fmt.Sprintf("invalid: %d filters, at most %d allowed", len(m)-2, max)
	}
	fs := make(nostr.Filters, len(m)-2)
	for i, raw := range m[2:] {
		if !raw.IsObject() {
			return nil, fmt.Sprintf("invalid: filter %d is not an object", i+1)
		}
		if err := easyjson.Unmarshal(bytesOf(raw.Raw), &fs[i]); err != nil {
			return nil, fmt.Sprintf("invalid: filter %d: %v", i+1, err)
		}
		if fs[i].Search != "" {
			return nil, "unsupported: search (NIP-50) is not supported by this relay"
		}
		ownTagNames(fs[i].Tags)
	}
	return fs, ""
}

// ownTagNames copies the tag names of a decoded filter: easyjson leaves
// them pointing into the message, so a subscription holding its filters
// would hold its whole REQ frame (up to max_message_length) with them.
func ownTagNames(tags nostr.TagMap) {
	names := make([]string, 0, len(tags))
	for name := range tags {
		names = append(names, name)
	}
	for _, name := range names {
		values := tags[name]
		delete(tags, name)
		tags[strings.Clone(name)] = values
	}
}

// filterValues counts what the filters from element 2 on name, as sent:
// the elements of their "ids", "authors", "kinds" and "#x" arrays. A filter
// naming none counts one: it is checked against every event, so it is held
// too. Nothing is decoded, so a REQ can be refused for it cheaply.
func (m message) filterValues() int {
	n := 0
	for i := 2; i < len(m); i++ {
		named := 0
		m[i].ForEach(func(k, v gjson.Result) bool {
			if key := k.Str; v.IsArray() && (key == "ids" || key == "authors" || key == "kinds" || (len(key) > 1 && key[0] == '#')) {
				v.ForEach(func(_, _ gjson.Result) bool {
					named++
					return true
				})
			}
			return true
		})
		n += max(1, named)
	}
	return n
}

// event decodes the event in element i.
func (m message) event(i int) (*nostr.Event, string) {
	if len(m) <= i || !m[i].IsObject() {
		return nil, "invalid: no event object"
	}
	ev := &nostr.Event{}
	if err := easyjson.Unmarshal(bytesOf(canonicalFields(m[i])), ev); err != nil {
		return nil, "invalid: malformed event: " + err.Error()
	}
	return ev, ""
}

// eventFields are the fields of a NIP-01 event.
var eventFields = map[string]bool{"id": true, "pubkey": true, "created_at": true, "kind": true, "tags": true, "content": true, "sig": true}

// canonicalFields is the event object obj without fields NIP-01 does not
// name. Some client libraries leave their own in ("seenOn"); the id covers
// only NIP-01's, so they are dropped, as strfry does. go-nostr's decoder
// cannot skip an unknown field's value and fails on it. Most events have
// none and are returned as they are.
func canonicalFields(obj gjson.Result) string {
	extra := false
	obj.ForEach(func(k, _ gjson.Result) bool {
		extra = !eventFields[k.Str]
		return !extra
	})
	if !extra {
		return obj.Raw
	}
	b := []byte{'{'}
	obj.ForEach(func(k, v gjson.Result) bool {
		if eventFields[k.Str] {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(append(append(b, k.Raw...), ':'), v.Raw...)
		}
		return true
	})
	return string(append(b, '}'))
}

// eventID is the "id" of the event in element i, if it has a string one.
func (m message) eventID(i int) string {
	if len(m) <= i {
		return ""
	}
	if id := m[i].Get("id"); id.Type == gjson.String {
		return id.Str
	}
	return ""
}

func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
