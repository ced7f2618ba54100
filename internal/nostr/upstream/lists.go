package upstream

import (
	"context"
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// byAuthors are filters of kind by the authors list names, in chunks a
// relay will take; none without list.
func byAuthors(ctx context.Context, kind int, list func(context.Context) []string) []nostr.Filter {
	if list == nil {
		return nil
	}
	authors := list(ctx)
	slices.Sort(authors)
	var fs []nostr.Filter
	for chunk := range slices.Chunk(slices.Compact(authors), 250) {
		fs = append(fs, nostr.Filter{Kinds: []int{kind}, Authors: chunk})
	}
	return fs
}
