package policies

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Bounds of a fetched answer. A list is decoded as a stream, element by
// element, so what a hostile or broken remote can make a follower hold is
// one element (maxElementBytes, far above any ban: a reason is at most 200
// characters) plus what the list keeps, never the body: a string that never
// ends fails after maxElementBytes, a body that never ends after
// maxListBytes or maxListEntries, whichever comes first, or at the deadline.
const (
	maxElementBytes = 64 << 10
	maxListBytes    = 32 << 20 // 100,000 bans are about 15 MB of JSON
	// maxSnapshot bounds the bans of a whole list fetched in pages: ten
	// million keys, the size the ban list is designed for.
	maxSnapshot = 10_000_000
)

// maxListEntries bounds the bans, or words, of one answer (a page of bans
// is 10,000); a variable so a test can lower it.
var maxListEntries = 200_000

var (
	errElementTooBig = fmt.Errorf("an element of the answer is over %d bytes", maxElementBytes)
	errBodyTooBig    = fmt.Errorf("the answer is over %d bytes", maxListBytes)
)

// boundedBody reads a body for a json.Decoder, failing once the body is
// over max bytes, or once more than maxElementBytes were read since the
// last element began (mark): the decoder only reads past that to finish
// one token or value.
type boundedBody struct {
	r          io.Reader
	total, max int64
	elem       int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.total >= b.max {
		return 0, errBodyTooBig
	}
	if b.elem >= maxElementBytes {
		return 0, errElementTooBig
	}
	p = p[:min(int64(len(p)), b.max-b.total, maxElementBytes-b.elem)]
	n, err := b.r.Read(p)
	b.total += int64(n)
	b.elem += int64(n)
	return n, err
}

// mark starts a new element.
func (b *boundedBody) mark() { b.elem = 0 }

// listAnswer is one answer of /blocked/pubkeys or /blocked/words, the whole
// list or its changes, as far as a follower uses it.
type listAnswer struct {
	Identity
	Cursor  string
	Next    string        // pubkeys, a page: the ?after= of the next page; "" on the last
	Entries []remoteEntry // pubkeys: the whole list, or added
	Gone    []remoteEntry // pubkeys: lifted and expired
	Words   []string      // words: the whole list, or added
	Removed []string      // words: removed
	n       int           // entries and words so far
}

// arrays says where each array member of an answer goes.
func (a *listAnswer) arrays(words bool) map[string]func(*streamDecoder) error {
	if words {
		return map[string]func(*streamDecoder) error{
			"words":   func(d *streamDecoder) error { return eachOf(d, a, &a.Words) },
			"added":   func(d *streamDecoder) error { return eachOf(d, a, &a.Words) },
			"removed": func(d *streamDecoder) error { return eachOf(d, a, &a.Removed) },
		}
	}
	return map[string]func(*streamDecoder) error{
		"pubkeys": func(d *streamDecoder) error { return eachOf(d, a, &a.Entries) },
		"added":   func(d *streamDecoder) error { return eachOf(d, a, &a.Entries) },
		"lifted":  func(d *streamDecoder) error { return eachOf(d, a, &a.Gone) },
		"expired": func(d *streamDecoder) error { return eachOf(d, a, &a.Gone) },
	}
}

// streamDecoder is a json.Decoder over a boundedBody.
type streamDecoder struct {
	*json.Decoder
	body *boundedBody
}

func newStreamDecoder(r io.Reader) *streamDecoder {
	b := &boundedBody{r: r, max: maxListBytes}
	return &streamDecoder{Decoder: json.NewDecoder(b), body: b}
}

// token reads the next token as one element.
func (d *streamDecoder) token() (json.Token, error) {
	d.body.mark()
	return d.Token()
}

// value decodes the next value as one element.
func (d *streamDecoder) value(v any) error {
	d.body.mark()
	return d.Decode(v)
}

// decodeList reads one answer: a JSON object whose arrays are decoded
// element by element and whose other members are strings or skipped. It
// must hold the array named list: an object without it (`{}` from some
// other JSON service at that URL) is not an empty ban list.
func decodeList(r io.Reader, words bool, list string) (*listAnswer, error) {
	d := newStreamDecoder(r)
	a := &listAnswer{}
	arrays := a.arrays(words)
	strs := map[string]*string{"cursor": &a.Cursor, "service_pubkey": &a.PubKey, "epoch": &a.Epoch, "next": &a.Next}
	if err := open(d, '{'); err != nil {
		return nil, err
	}
	found := false
	for d.More() {
		t, err := d.token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		found = found || name == list
		if each, ok := arrays[name]; ok {
			err = each(d)
		} else if s, ok := strs[name]; ok {
			err = d.value(s)
		} else {
			err = d.value(&json.RawMessage{}) // a member this follower does not know
		}
		if err != nil {
			return nil, fmt.Errorf("%q: %w", name, err)
		}
	}
	if _, err := d.token(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("not a ban list: no %q", list)
	}
	return a, nil
}

// open reads the delimiter that opens an object or array.
func open(d *streamDecoder, delim json.Delim) error {
	t, err := d.token()
	if err != nil {
		return err
	}
	if t != delim {
		return fmt.Errorf("want %v, got %v", delim, t)
	}
	return nil
}

// eachOf appends the elements of a JSON array (null: none) to out,
// decoding one at a time.
func eachOf[T any](d *streamDecoder, a *listAnswer, out *[]T) error {
	t, err := d.token()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('[') {
		return errors.New("not an array")
	}
	for d.More() {
		if a.n++; a.n > maxListEntries {
			return fmt.Errorf("the answer lists over %d entries", maxListEntries)
		}
		var v T
		if err := d.value(&v); err != nil {
			return err
		}
		*out = append(*out, v)
	}
	_, err = d.token()
	return err
}
