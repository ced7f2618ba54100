package publish

import (
	"context"
	"fmt"
	"slices"

	"github.com/nbd-wtf/go-nostr"
	"github.com/outpost-relay/outpost/internal/nostr/nostrclient"
)

// Fetch asks a relay for the events matching a filter, to its EOSE.
type Fetch func(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error)

// List is a ban list as its pages publish it.
type List struct {
	Bans  []nostr.Tag // the p tags: ["p", <hex>, "", <reason>, <expires_at>?]
	Words []string
}

// readBatch is how many pages one filter asks for: under the max_limit
// relays clamp a filter to (500 on outpost and strfry by default) and
// the values a filter may name (strfry: 200).
const readBatch = 100

// ReadList reads the ban list that pubkey publishes from a relay, as any
// reader may: from the pages of the shortest prefixes (the 256 of two
// digits for keys, the one of none for words), it takes the tags of each
// page found with some, and asks for the 16 pages one digit deeper under
// each page found empty; a page not found holds nothing. Of each address
// only the newest event counts.
func ReadList(ctx context.Context, fetch Fetch, pubkey string) (List, error) {
	var l List
	for _, ps := range []pageSet{banPages, wordPages} {
		tags, err := ps.read(ctx, fetch, pubkey)
		if err != nil {
			return List{}, err
		}
		for _, t := range tags {
			switch {
			case ps == banPages && t[0] == "p":
				l.Bans = append(l.Bans, t)
			case ps == wordPages && t[0] == "word":
				l.Words = append(l.Words, t[1])
			}
		}
	}
	return l, nil
}

// read walks one set's pages down from its shortest prefixes.
func (ps pageSet) read(ctx context.Context, fetch Fetch, pubkey string) ([]nostr.Tag, error) {
	var out []nostr.Tag
	level := children("", ps.depth)
	for depth := ps.depth; len(level) > 0; depth++ {
		if depth > 64 {
			return nil, fmt.Errorf("pages of %s deeper than 64 digits", ps.prefix)
		}
		pages, err := ps.fetchPages(ctx, fetch, pubkey, level)
		if err != nil {
			return nil, err
		}
		var deeper []string
		for _, prefix := range level {
			ev := pages[ps.prefix+prefix]
			switch {
			case ev == nil:
			case len(ev.Tags) <= 2: // d and title only: split, or emptied
				deeper = append(deeper, children(prefix, 1)...)
			default:
				out = append(out, ev.Tags[2:]...)
			}
		}
		level = deeper
	}
	return out, nil
}

// fetchPages asks for the pages of prefixes, readBatch at a time, and
// keeps the newest of each.
func (ps pageSet) fetchPages(ctx context.Context, fetch Fetch, pubkey string, prefixes []string) (map[string]*nostr.Event, error) {
	pages := map[string]*nostr.Event{}
	for batch := range slices.Chunk(prefixes, readBatch) {
		ds := make([]string, len(batch))
		for i, p := range batch {
			ds[i] = ps.prefix + p
		}
		evs, err := fetch(ctx, nostr.Filter{Kinds: []int{KindBanPage}, Authors: []string{pubkey}, Tags: nostr.TagMap{"d": ds}, Limit: len(ds)})
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			d := ev.Tags.GetD()
			if cur := pages[d]; cur == nil || ev.CreatedAt > cur.CreatedAt {
				pages[d] = ev
			}
		}
	}
	return pages, nil
}

// children are the prefixes n hex digits longer than prefix.
func children(prefix string, n int) []string {
	out := []string{prefix}
	for range n {
		var next []string
		for _, p := range out {
			for _, c := range "0123456789abcdef" {
				next = append(next, p+string(c))
			}
		}
		out = next
	}
	return out
}

// RelayFetch is a Fetch over one connection: one subscription at a time,
// read to its EOSE and closed. Events whose signature does not verify, or
// that do not match the filter, are dropped: the relay is not trusted.
func RelayFetch(c *nostrclient.Conn) Fetch {
	n := 0
	return func(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
		n++
		sub := fmt.Sprint("pages-", n)
		if err := c.Req(ctx, sub, f); err != nil {
			return nil, err
		}
		defer c.Send(ctx, "CLOSE", sub)
		var out []*nostr.Event
		for {
			m, err := c.Next(ctx)
			if err != nil {
				return nil, err
			}
			switch {
			case m.Sub != sub:
			case m.Label == "EOSE":
				return out, nil
			case m.Label == "CLOSED":
				return nil, fmt.Errorf("the relay closed the subscription: %s", m.Text)
			case m.Label == "EVENT" && m.Event != nil && f.Matches(m.Event):
				if ok, _ := m.Event.CheckSignature(); ok {
					out = append(out, m.Event)
				}
			}
		}
	}
}
